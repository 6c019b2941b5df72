#!/usr/bin/env bash
# CI job (.ci/run runs it in a lane; runs alone too, after the install): every
# expressible ATen out= overload (`--ops all`, docs/coverage.md) in its own
# build directory, and the correctness harness over it: it exits 1 when any
# op failed, crashed, raised in its worker or has no sample without a
# skip-file entry; its summary counts every exclusion and skip with its
# reason.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh

step --budget full-build "the full ATen set (--ops all): build" \
    infiniops-codegen build --ops all --build-dir build-all
step --budget full-harness "the full ATen set: correctness harness, 0 failed" \
    python -m infiniops_codegen.harness --build-dir build-all --skips tests/skips.yaml
