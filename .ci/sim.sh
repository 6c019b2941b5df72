#!/usr/bin/env bash
# CI job (.ci/run runs it in a lane; runs alone too, after the install): the
# simulated accelerator (infiniops_codegen/sim/, docs/platforms.md): the
# default set built for cpu,sim into build-sim/, the correctness harness with
# every sample on sim:0 and then on sim:1 (another device than the current
# one), and the native-kernel fuzzer on the sim kernels (the CPU ones are
# the suite's tests/test_native_fuzz.py and init's project,
# tests/test_check_fuzz.py). build-sim/ is what the own_build tests' sim
# device tests run on (INFINIOPS_SIM_BUILD_DIR's default).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh

step --budget sim-build "simulated accelerator: build --platform cpu,sim" \
    infiniops-codegen build --platform cpu,sim --build-dir build-sim
step --budget sim-harness "simulated accelerator: correctness harness on sim and sim:1, 0 failed" \
    python -m infiniops_codegen.harness --build-dir build-sim --devices sim,sim:1 \
    --skips tests/skips.yaml
step --budget sim-fuzz "simulated accelerator: native-kernel fuzzer on sim, 0 failed" \
    infiniops-codegen check --fuzz-only --device sim --build-dir build-sim --examples 30
