#!/usr/bin/env bash
# bench/fuzz.sh [RUNS] [SEED]: the fuzzers of tests/unit/test-fuzz.c for longer than CI runs
# them (CI: 100 runs of each, from a seed of the time): RUNS (default 5000) runs of corrupted
# VM memory and of mutated core files, from SEED (default: the time), under an ASan+UBSan
# build (RBI_BUILD, default build-asan; `meson setup build-asan -Db_sanitize=address,undefined
# -Db_lundef=false`).  A failing run prints its seed: RBI_FUZZ_SEED=S RBI_FUZZ_RUNS=1
# build-asan/tests/test-fuzz replays it under a debugger; make it a regression test.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${RBI_BUILD:-$here/build-asan}
ninja -C "$build" tests/test-fuzz >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:exitcode=99:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:exitcode=99:print_stacktrace=1}
RBI_FUZZ_RUNS=${1:-5000} RBI_FUZZ_SEED=${2:-$(date +%s)} exec nice "$build/tests/test-fuzz"
