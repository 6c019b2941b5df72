#!/usr/bin/env bash
# The NVIDIA check, for a machine with an NVIDIA GPU and a CUDA build of
# torch (docs/platforms.md). One command, about 10 minutes at most:
#
#   scripts/gpu_check.sh            # all steps
#   GPU_CHECK_OPS=add,rms_norm,silu_and_mul scripts/gpu_check.sh   # fewer ops
#
# 1. builds the module with --platform cpu,nvidia into build-plat-gpu/
#    (native CUDA kernels for this GPU's architecture, stream guards; the
#    build finds the CUDA toolkit and the GPU's architecture itself:
#    docs/building.md, "CUDA builds of torch");
# 2. runs stream and native-kernel checks on cuda (scripts/gpu/smoke.py);
# 3. runs the correctness harness with --devices cuda;
# 4. runs `infiniops-codegen bench --quick` on cuda.
# Each step has a time limit (240 + 60 + 120 + 180 s: 10 minutes in all);
# the first failure stops the run (exit 1).
# Results: build-plat-gpu/harness-cuda.json, build-plat-gpu/bench-cuda/.
#
# It runs the tool from this tree (python -m infiniops_codegen.cli), not an
# installed infiniops-codegen: a GPU machine's image (Python 3.12, a CUDA
# build of torch, nvcc, cmake, ninja, no network) needs nothing installed.
# First it checks that everything it uses is there, and stops naming what is
# not; GPU_CHECK_PREFLIGHT_ONLY=1 runs that check alone (it needs no GPU).
# GPU_CHECK_PYTHON chooses the interpreter (default: python3).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${GPU_CHECK_PYTHON:-python3}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
tool() { "$PY" -m infiniops_codegen.cli "$@"; }

BUILD=${GPU_CHECK_BUILD_DIR:-build-plat-gpu}
OPS=${GPU_CHECK_OPS:-}
# The smoke step needs the ops with native CUDA kernels.
[[ -n "$OPS" ]] && OPS="$OPS,add,rms_norm,silu_and_mul"
JOBS=${GPU_CHECK_JOBS:-$(nproc)}
ops_args=()
[[ -n "$OPS" ]] && ops_args=(--ops "$OPS")
start=$SECONDS

step() { echo; echo "== [$((SECONDS - start)) s] $*"; }

step "preflight: the tools and Python modules it uses"
missing=()
for t in cmake ninja nvcc "$PY"; do
  command -v "$t" >/dev/null || missing+=("$t (not on PATH)")
done
[[ ${#missing[@]} -eq 0 ]] || { printf 'gpu_check: missing: %s\n' "${missing[@]}" >&2; exit 1; }
"$PY" - "$ROOT" <<'PY'
import importlib, os, sys

root = sys.argv[1]
missing = []
# click, jinja2, yaml: the tool; torchgen: with torch; matplotlib: bench.
for name in ("click", "jinja2", "yaml", "torch", "torchgen", "matplotlib"):
    try:
        importlib.import_module(name)
    except ImportError as e:
        missing.append(f"{name} ({e})")
if missing:
    sys.exit("gpu_check: Python modules missing for " + sys.executable + ": "
             + ", ".join(missing))
import infiniops_codegen

where = os.path.dirname(os.path.dirname(os.path.abspath(infiniops_codegen.__file__)))
if os.path.realpath(where) != os.path.realpath(root):
    sys.exit(f"gpu_check: infiniops_codegen imports from {where}, not this tree ({root})")
import torch

print(f"Python {sys.version.split()[0]} ({sys.executable}), torch {torch.__version__}, "
      f"infiniops_codegen from {where}")
PY
tool --version
[[ "${GPU_CHECK_PREFLIGHT_ONLY:-0}" == 1 ]] && { echo "preflight passed"; exit 0; }

step "environment"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$PY" - <<'PY'
import sys, torch
print("torch", torch.__version__, "CUDA", torch.version.cuda)
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch.cuda.is_available() is False: this needs an NVIDIA GPU "
             "and a CUDA build of torch (the pinned CPU wheel cannot run cuda)")
print("device:", torch.cuda.get_device_name(0))
PY

step "build --platform cpu,nvidia into $BUILD (limit 240 s)"
# Kernels for this machine's GPUs: with a CUDA build of torch, torch's CMake
# takes the architectures from TORCH_CUDA_ARCH_LIST only (it ignores
# CUDAARCHS), which the build sets from nvidia-smi unless it is set.
timeout 240 \
  nice "$PY" -m infiniops_codegen.cli build --platform cpu,nvidia --build-dir "$BUILD" -j "$JOBS" "${ops_args[@]}"

step "streams and native CUDA kernels (limit 60 s)"
timeout 60 "$PY" scripts/gpu/smoke.py "$BUILD"

step "correctness harness on cuda (limit 120 s)"
timeout 120 "$PY" -m infiniops_codegen.harness --build-dir "$BUILD" --devices cuda \
  --skips tests/skips.yaml \
  --report "$BUILD/harness-cuda.json" ${OPS:+--ops "$OPS"}

step "bench --quick on cuda (limit 180 s)"
# The bench builds its own "before" build (-O0, cpu) on its first run.
bench=("$PY" -m infiniops_codegen.cli bench --quick --after-build-dir "$BUILD" --before-build-dir "$BUILD-O0"
  --out "$BUILD/bench-cuda")
[[ -n "$OPS" ]] && bench+=(--ops "$OPS")
# --device, never torch.set_default_device: a default device is a
# TorchFunctionMode, and every call of the library would go to it.
timeout 180 "${bench[@]}" --device cuda

step "done: every GPU check passed in $((SECONDS - start)) s"
