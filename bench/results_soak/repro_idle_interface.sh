#!/bin/bash
# An idle live interface beside a busy one (lo at 10,000 packets/s for 10 s, an idle
# veth as the second source). Before e366a5f the idle source's 100 ms wait capped lo at
# --batch (512) packets per round: ~5,000 packets/s read, the rest dropped by the kernel
# (kernel_dropped ~87,000); since, 10,000/s read and none dropped.
# Needs root. Usage: repro_idle_interface.sh [extra gsqlc args]
set -u
d=$(mktemp -d)
cat > $d/q.gsql <<'Q'
DEFINE { query_name 'lo_sec'; }
select tb, count(*) as cnt from loop.UDP where destPort = 47011 group by time as tb;
DEFINE { query_name 'idle_sec'; }
select tb, count(*) as cnt from idle.UDP where destPort = 47011 group by time as tb
Q
ip link add gsqr0 type veth peer name gsqr1 && ip link set gsqr0 up && ip link set gsqr1 up
trap 'ip link del gsqr0 2>/dev/null' EXIT
python3 -m gsqlc run $d/q.gsql --source loop=pcap-live:lo --source idle=pcap-live:gsqr0 \
    --stats "$@" > $d/out.txt 2> $d/err.txt &
pid=$!
until [ $(ls -l /proc/$pid/fd 2>/dev/null | grep -c socket) -ge 2 ]; do sleep 0.2; done
sleep 1
python3 - <<'PY'
import socket, time
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 47011))  # no ICMP
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < 10:                       # 10,000 packets/s for 10 s
    due = int((time.monotonic() - t0) * 10000)
    while n < due:
        s.sendto(b"x" * 32, ("127.0.0.1", 47011)); n += 1
    time.sleep(0.002)
print("sent", n)
PY
sleep 3; kill -TERM $pid; wait $pid; echo "gsqlc exit $?"
echo "per-second counts:"; cat $d/out.txt | tr '\n' ' '; echo
grep -E '"(packets_read|kernel_dropped|interface_dropped)"' $d/err.txt
grep warning $d/err.txt
rm -rf $d
