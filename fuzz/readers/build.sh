#!/usr/bin/env bash
# Build the libFuzzer harnesses of the C input readers (fuzz_<target>.c
# beside this script) with clang, ASan and UBSan, from the runtime's own
# sources (runtime_c/), into a build folder.
#
#   fuzz/readers/build.sh [BUILD_DIR [TARGET...]]
#
# BUILD_DIR defaults to /tmp/gsqlc-fuzz-readers; TARGET is pcap, csv or
# arrow (default: all three).  Binaries: BUILD_DIR/fuzz_<target>.
# Needs clang-14 and its libFuzzer runtime (Debian 12: apt-get install
# clang-14 libclang-rt-14-dev) and libpcap-dev; CC overrides the compiler.
#
#   pcap   runtime_c/sources/pcap_mmap.c + pkt_decode.c alone (their header
#          says they need nothing else), pcap_mmap.c with small cut blocks
#          (-DGSQ_PCAP_CUT_BLOCK=4u, as tests/test_pcap_mmap.py builds it)
#   csv, arrow  the whole runtime (core, sources, sinks, run), instrumented
#          for coverage, linked with -lpcap
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RT=$ROOT/runtime_c
OUT=${1:-/tmp/gsqlc-fuzz-readers}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(pcap csv arrow)
CC=${CC:-clang-14}
JOBS=${JOBS:-2}

if ! command -v "$CC" >/dev/null; then
    echo "build.sh: $CC not found (Debian: apt-get install clang-14 libclang-rt-14-dev)" >&2
    exit 2
fi

SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
CFLAGS=(-std=c11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra "${SAN[@]}"
        -I"$RT/include" -I"$RT/lfta" -I"$RT/core" -I"$RT/sources" -I"$RT/sinks" -I"$RT/run")
mkdir -p "$OUT/obj"

# Compile SRC into OBJ unless OBJ is newer than SRC and every header.
compile() { # OBJ SRC FLAGS...
    local obj=$1 src=$2
    shift 2
    if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$OUT/.headers" ]; then
        return 0
    fi
    "$CC" "${CFLAGS[@]}" "$@" -c "$src" -o "$obj"
}
export CC OUT
# a stamp as new as the newest runtime header: objects older than it are rebuilt
newest=$(find "$RT" -name '*.h' -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
if [ ! -f "$OUT/.headers" ] || [ "$newest" -nt "$OUT/.headers" ]; then
    touch -r "$newest" "$OUT/.headers"
fi

need_runtime=0
for t in "${TARGETS[@]}"; do
    case "$t" in
    pcap) ;;
    csv | arrow) need_runtime=1 ;;
    *) echo "build.sh: unknown target '$t' (pcap, csv, arrow)" >&2; exit 2 ;;
    esac
done

RUNTIME_OBJS=()
if [ $need_runtime = 1 ]; then
    srcs=()
    for d in core sources sinks run; do
        for s in "$RT/$d"/*.c; do
            srcs+=("$s")
            RUNTIME_OBJS+=("$OUT/obj/rt_$(basename "$s" .c).o")
        done
    done
    # (xargs runs one compiler per source, JOBS at a time)
    printf '%s\n' "${srcs[@]}" | CFLAGS_STR="${CFLAGS[*]}" xargs -P "$JOBS" -I{} bash -c '
        set -euo pipefail
        src={}; obj="$OUT/obj/rt_$(basename "$src" .c).o"
        if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$OUT/.headers" ]; then exit 0; fi
        $CC $CFLAGS_STR -fsanitize=fuzzer-no-link -c "$src" -o "$obj"'
fi

for t in "${TARGETS[@]}"; do
    case "$t" in
    pcap)
        compile "$OUT/obj/pcap_mmap_cut4.o" "$RT/sources/pcap_mmap.c" \
            -fsanitize=fuzzer-no-link -DGSQ_PCAP_CUT_BLOCK=4u
        compile "$OUT/obj/pkt_decode.o" "$RT/sources/pkt_decode.c" -fsanitize=fuzzer-no-link
        compile "$OUT/obj/fuzz_pcap.o" "$HERE/fuzz_pcap.c" -fsanitize=fuzzer-no-link \
            -DGSQ_PCAP_CUT_BLOCK=4u
        "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_pcap" "$OUT/obj/fuzz_pcap.o" \
            "$OUT/obj/pcap_mmap_cut4.o" "$OUT/obj/pkt_decode.o"
        ;;
    csv | arrow)
        compile "$OUT/obj/fuzz_$t.o" "$HERE/fuzz_$t.c" -fsanitize=fuzzer-no-link
        "$CC" "${CFLAGS[@]}" -fsanitize=fuzzer -o "$OUT/fuzz_$t" "$OUT/obj/fuzz_$t.o" \
            "${RUNTIME_OBJS[@]}" -lpcap -lm -lpthread
        ;;
    esac
    echo "built $OUT/fuzz_$t"
done
