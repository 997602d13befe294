#!/usr/bin/env bash
# Re-record examples/trace.pcap: real loopback traffic (python http.server,
# curl and python HTTP clients with assorted Host headers, a DNS-like UDP
# exchange over 127.0.0.1 and ::1), captured with tcpdump on `lo` only.
#
#   sudo examples/record_trace.sh [OUT.pcap]     (default examples/trace.pcap)
#
# Bounded: waits at most 60 s for the wall clock to reach hh:mm:50 (so the
# capture covers three 60-second buckets), then drives traffic for
# TRAFFIC_SECONDS (default 80) and stops every process it started (trap).
# Environment: PORT (8765), UDP_PORT (8053), TRAFFIC_SECONDS (80).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$HERE/trace.pcap}"
PORT="${PORT:-8765}"
UDP_PORT="${UDP_PORT:-8053}"
SECS="${TRAFFIC_SECONDS:-80}"
PY="${PYTHON:-python3}"
TRAFFIC="$HERE/trace_traffic.py"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    # stop what we started, by pid only; tcpdump gets SIGINT to flush
    if [[ -n "${TCPDUMP_PID:-}" ]] && kill -0 "$TCPDUMP_PID" 2>/dev/null; then
        kill -INT "$TCPDUMP_PID" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$TCPDUMP_PID" 2>/dev/null || break
            sleep 0.3
        done
        kill -KILL "$TCPDUMP_PID" 2>/dev/null || true
    fi
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap "exit 130" INT TERM

# --- content served -------------------------------------------------------
mkdir -p "$WORK/www/data"
printf '<html><body><h1>gsqlc trace</h1><p>hello</p></body></html>\n' > "$WORK/www/index.html"
printf 'a small text file\n%.0s' 1 2 3 4 5 > "$WORK/www/a.txt"
printf '{"k": [1, 2, 3], "name": "b"}\n' > "$WORK/www/data/b.json"

# --- servers (each bounded by `timeout`) ----------------------------------
LIMIT=$((SECS + 90))
timeout "$LIMIT" "$PY" -m http.server -b 127.0.0.1 -d "$WORK/www" -p HTTP/1.1 "$PORT" \
    > "$WORK/http4.log" 2>&1 &
PIDS+=($!)
timeout "$LIMIT" "$PY" -m http.server -b ::1 -d "$WORK/www" "$PORT" \
    > "$WORK/http6.log" 2>&1 &
PIDS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" udp-server 127.0.0.1 "$UDP_PORT" $((SECS + 5)) &
PIDS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" udp-server ::1 "$UDP_PORT" $((SECS + 5)) &
PIDS+=($!)

# wait for the HTTP servers to listen
for _ in $(seq 1 50); do
    if curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null &&
       curl -s -o /dev/null -g "http://[::1]:$PORT/" 2>/dev/null; then
        break
    fi
    sleep 0.1
done

# --- align to hh:mm:50 so the capture covers three minute buckets ---------
while (( $(date +%-S) < 50 || $(date +%-S) > 53 )); do sleep 0.2; done

rm -f "$OUT"
tcpdump -i lo -s 0 -U -Z root -w "$OUT" "tcp port $PORT or udp" 2> "$WORK/tcpdump.log" &
TCPDUMP_PID=$!
sleep 1.5   # let tcpdump attach

# --- clients --------------------------------------------------------------
CLIENTS=()
timeout "$LIMIT" "$PY" "$TRAFFIC" http-client py-a 127.0.0.1 "$PORT" "$SECS" 1 & CLIENTS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" http-client py-b 127.0.0.1 "$PORT" "$SECS" 2 & CLIENTS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" http-client py-c ::1 "$PORT" "$SECS" 3 & CLIENTS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" udp-client 127.0.0.1 "$UDP_PORT" "$SECS" 4 & CLIENTS+=($!)
timeout "$LIMIT" "$PY" "$TRAFFIC" udp-client ::1 "$UDP_PORT" "$SECS" 5 & CLIENTS+=($!)
PIDS+=("${CLIENTS[@]}")

# curl: a few GETs with explicit (and lower-case) Host headers
(
    hosts=("Host: www.example.com" "host: api.test.local" "Host: curl.example.org"
           "Host: www.example.com" "HOST: API.TEST.LOCAL")
    paths=(/index.html /a.txt /data/b.json /nope /)
    end=$(( $(date +%s) + SECS ))
    i=0
    while (( $(date +%s) < end && i < 30 )); do
        h="${hosts[$((i % ${#hosts[@]}))]}"
        p="${paths[$(((i * 3) % ${#paths[@]}))]}"
        curl -s -m 5 -o /dev/null -H "$h" -A "curl-trace" "http://127.0.0.1:$PORT$p" || true
        i=$((i + 1))
        sleep 3.$((i % 10))
    done
) &
CLIENTS+=($!)
PIDS+=($!)

for p in "${CLIENTS[@]}"; do wait "$p" || true; done
sleep 1.5   # trailing ACK/FIN packets

kill -INT "$TCPDUMP_PID"
wait "$TCPDUMP_PID" 2>/dev/null || true
TCPDUMP_PID=
cat "$WORK/tcpdump.log" >&2

"$PY" - "$OUT" <<'EOF'
import struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
off, n, first, last = 24, 0, None, None
while off + 16 <= len(data):
    sec, usec, caplen, _ = struct.unpack_from("<IIII", data, off)
    t = sec + usec / 1e6
    first = t if first is None else first
    last = t
    n += 1
    off += 16 + caplen
print(f"{path}: {len(data)} bytes, {n} packets, {first:.6f} .. {last:.6f} "
      f"({last - first:.1f} s)")
EOF
