#!/usr/bin/env bash
# CI step (.ci/run calls it; runs alone too, after the install): the
# covering selection of the default op set (`--ops covering`: every path the
# default set takes, tests/test_covering.py) with every op the tests below
# name (tests/named_ops.py), built with AddressSanitizer + UBSan, and under
# it the correctness harness, the thread and lane tests, the re-entrancy
# fuzz (tests/test_fuzz_reentrancy.py) and both fuzzers again with several
# seeds, side by side in one session; then a ThreadSanitizer build of the
# same kind and the thread and lane tests under it.
#
# Every process runs through the build's python-sanitized (the line
# `build --sanitize` prints): halt_on_error=1, so the first report ends the
# process and fails its test; the tool's suppression files
# (infiniops_codegen/data/sanitizers/) hold only reports whose every frame is
# in ld.so, libtorch or libpython, each with its reason. After each run the
# output and the sanitizers' log files are searched for reports as well, so a
# report in a child whose exit status a test tolerated still fails the step.
# pytest runs with --capture=sys: a report written to fd 2 while a test runs
# reaches the log instead of pytest's capture, which dies with the process.
# pytest-xdist's workers (pyproject.toml's -n auto) start from the sanitized
# interpreter with its environment, so they run under the sanitizers too,
# and a worker's fd 2 is the run's; a worker a report ends fails its test.
#
# Tests that cannot run under a sanitizer carry the no_sanitizer marker
# (pyproject.toml) and are deselected: pytest counts them ("N deselected").
#
# Sizes (docs/building.md: measured times): INFINIOPS_SANITIZER_FUZZ_SEEDS,
# INFINIOPS_SANITIZER_FUZZ_EXAMPLES (examples per op and seed).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh

ASAN_DIR=${INFINIOPS_ASAN_BUILD_DIR:-build-asan}
TSAN_DIR=${INFINIOPS_TSAN_BUILD_DIR:-build-tsan}
SEEDS=${INFINIOPS_SANITIZER_FUZZ_SEEDS-"1 2 3"}  # empty: none
EXAMPLES=${INFINIOPS_SANITIZER_FUZZ_EXAMPLES:-100}
# Which sanitizers: both by default; `address` or `thread` alone (.ci/run
# runs each in a lane of its own).
WHICH=${1:-all}
case $WHICH in
    all | address | thread) ;;
    *)
        echo "FAILED: .ci/sanitizers.sh [address|thread] (got '$WHICH')" >&2
        exit 2
        ;;
esac
LOGS=${INFINIOPS_SANITIZER_LOGS:-sanitizer-logs/$WHICH}
rm -rf "$LOGS" && mkdir -p "$LOGS/reports"
LOGS=$(cd "$LOGS" && pwd)
REPORTS=$LOGS/reports  # the sanitizers' own log files (log_path)

# The tests under a sanitizer: the thread and lane tests, the harness, the
# re-entrancy fuzz; then both fuzzers once per seed.
UNDER_ASAN=(tests/test_runtime_threads.py tests/test_runtime_lane.py tests/test_harness.py
    tests/test_sim_runtime.py tests/test_fuzz_reentrancy.py)
FUZZ=(tests/test_fuzz_runtime.py tests/test_fuzz_reentrancy.py::test_reentrancy_fuzz_matches_pytorch)
UNDER_TSAN=(tests/test_runtime_threads.py tests/test_runtime_lane.py)

# named FILE...: every op these tests (and the helpers they share) name.
named() {
    python tests/named_ops.py "$@" tests/conftest.py tests/runtime_conftest_helpers.py
}

# Fails when the output of a run ($1) or a sanitizer's log file holds a
# report (UBSan beside ASan writes to stderr only: it ignores log_path).
no_reports() {
    local found
    found=$(grep -lE "ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer" \
        "$1" "$REPORTS"/* 2> /dev/null || true)
    if [ -n "$found" ]; then
        echo "FAILED: sanitizer reports in: $found" >&2
        cat "$REPORTS"/* >&2 2> /dev/null || true
        exit 1
    fi
}

# under BUILD_DIR NAME PYTEST-ARGS...: pytest under the build's sanitizers,
# its output also in $LOGS/NAME.log; fails on a failed test or a report.
under() {
    local dir=$1 name=$2 status=0
    shift 2
    INFINIOPS_BUILD_DIR=$dir \
        ASAN_OPTIONS=log_path=$REPORTS/asan TSAN_OPTIONS=log_path=$REPORTS/tsan \
        "$dir/python-sanitized" -m pytest -q -p no:cacheprovider --capture=sys \
        -m "not no_sanitizer" "$@" 2>&1 | tee "$LOGS/$name.log" || status=$?
    no_reports "$LOGS/$name.log"
    if [ "$status" -ne 0 ]; then
        echo "FAILED: $name (pytest exit $status)" >&2
        exit "$status"
    fi
}

if [ "$WHICH" != thread ]; then
# With the simulated accelerator: the same build runs the CPU tests and, as
# INFINIOPS_SIM_BUILD_DIR, the sim tests (the sim backend itself is not
# instrumented; its page protection stays on: ASan does not touch the pages).
step --budget asan-build "ASan+UBSan build of the covering set and the tests' ops, cpu and sim" \
    infiniops-codegen build --sanitize address,undefined --platform cpu,sim \
    --build-dir "$ASAN_DIR" --ops "covering,$(named "${UNDER_ASAN[@]}" tests/test_fuzz_runtime.py \
    tests/fuzz_runtime_worker.py tests/reentrancy_fuzz_worker.py)"

export INFINIOPS_SIM_BUILD_DIR=$ASAN_DIR
step --budget asan-tests "under ASan+UBSan: thread, lane, harness, sim and re-entrancy tests" under "$ASAN_DIR" asan-tests "${UNDER_ASAN[@]}"
unset INFINIOPS_SIM_BUILD_DIR

# The seeds' runs of both fuzzers, one test each, side by side on the
# session's workers (--dist load: pyproject's loadfile would put a file's
# tests on one worker).
fuzz_seeds() {
    INFINIOPS_FUZZ_EXAMPLES=$EXAMPLES INFINIOPS_FUZZ_SEED=$SEEDS \
        INFINIOPS_REENTRANCY_SEED=$SEEDS under "$ASAN_DIR" asan-fuzz --dist load "${FUZZ[@]}"
}
if [ -n "$SEEDS" ]; then
    step --budget asan-fuzz "under ASan+UBSan: runtime and re-entrancy fuzz, seeds $SEEDS ($EXAMPLES examples per op)" fuzz_seeds
fi

fi

if [ "$WHICH" != address ]; then
step --budget tsan-build "TSan build of the covering set and the tests' ops" \
    infiniops-codegen build --sanitize thread --build-dir "$TSAN_DIR" \
    --ops "covering,$(named "${UNDER_TSAN[@]}")"

step --budget tsan-tests "under TSan: thread and lane tests" under "$TSAN_DIR" tsan-tests "${UNDER_TSAN[@]}"
fi
echo "sanitizers: no reports"
