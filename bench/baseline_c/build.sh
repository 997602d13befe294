#!/usr/bin/env bash
# Build the hand-written C baseline (plain -O2, no -march=native, for fairness).
set -euo pipefail
cd "$(dirname "$0")"
${CC:-gcc} -O2 -Wall -Wextra -o loop loop.c -lpcap
