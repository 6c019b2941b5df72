#!/usr/bin/env bash
# The tool as a user gets it: a wheel built from this checkout, installed in
# a fresh virtual environment, run on a copy of this project outside the
# checkout (from a subdirectory, so the project is found by walking up).
# `generate --check` must find the copy's generated/ current, and a small
# build must compile, link and pass its smoke call. The checkout must not
# change. Usage: bash scripts/check_wheel.sh [WORK_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
before=$(git -C "$repo" status --porcelain=v1 -uall)

step() { echo "== wheel check: $1 ($SECONDS s)"; }

step "build the wheel"
# From a copy of the tracked files: setuptools writes build/ and *.egg-info
# into the tree it builds, and this checkout's build/ is CMake's.
rm -rf "$work/dist" "$work/src"
mkdir -p "$work/src"
git -C "$repo" ls-files -z | (cd "$repo" && tar --null -T - -cf -) | tar -xf - -C "$work/src"
python -m pip wheel -q --no-deps --no-build-isolation "$work/src" -w "$work/dist"

step "install it in a fresh virtual environment"
rm -rf "$work/venv"
python -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check torch==2.13.0 "$work"/dist/*.whl
tool="$work/venv/bin/infiniops-codegen"
installed=$(cd "$work" && "$work/venv/bin/python" -c 'import infiniops_codegen; print(infiniops_codegen.__file__)')
case "$installed" in
"$work/venv/"*) ;;
*) echo "FAILED: infiniops_codegen imported from $installed, not the venv" >&2; exit 1 ;;
esac

step "--version: the tested range, from the wheel's metadata"
"$tool" --version | tee "$work/version.txt"
grep -q "as its package metadata states" "$work/version.txt"

step "a copy of the project outside the checkout"
rm -rf "$work/project"
mkdir "$work/project"
cp -r "$repo/op_specs" "$repo/generated" "$repo/cpp" "$repo/pyproject.toml" "$work/project/"
cd "$work/project/op_specs"

step "generate --check"
"$tool" generate --check

step "a small build (add, mul, abs; native CPU kernels of add and mul)"
"$tool" build --ops add,mul,abs --no-ccache

step "list"
"$tool" list --build-dir ../build | tail -3

step "import infiniops from the build directory (through its package: the torch check)"
(cd ../build && "$work/venv/bin/python" -c 'import infiniops; print("torch", infiniops.__torch_version__, "ops", len(infiniops.implementations()))')

after=$(git -C "$repo" status --porcelain=v1 -uall)
if [ "$before" != "$after" ]; then
    echo "FAILED: the checkout changed:" >&2
    diff <(echo "$before") <(echo "$after") >&2 || true
    exit 1
fi
step "done"
