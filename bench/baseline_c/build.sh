#!/usr/bin/env bash
# Build the benchmark's C floor (loop) and its line digest (digest) at the
# optimisation level of gsqlc's generated C: -O3, no -march (gsqlc's
# toolchain: CMake's Release flags, -O3 -DNDEBUG, -std=c11, -Wall -Wextra).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p build
${CC:-cc} -O3 -DNDEBUG -std=c11 -Wall -Wextra -Werror -o build/loop loop.c
${CC:-cc} -O3 -DNDEBUG -std=c11 -Wall -Wextra -Werror -o build/digest digest.c
