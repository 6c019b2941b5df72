#!/usr/bin/env bash
# CI step (.ci/run calls it; runs alone too): the supported torch releases
# besides the main job's 2.13.0 (the CPU wheel on Python 3.11), each in a
# virtual environment of its own, removed after its job (a CUDA build of
# torch takes about 5 GB). For each: the tool installed beside that torch
# (pip keeps it: the metadata's range takes it), the default build (the
# sources generated into the build directory where the release's schemas
# differ from the committed ones), the correctness harness, the OpInfo
# conformance test and the runtime tests, against that build. Before the
# build, `generate --check` on the committed generated/: it must pass for a
# job marked `:same` (a release whose default set's schemas are 2.13.0's);
# for the others its drift lines are shown (it exits 1 there by design).
# A job marked `:nvidia` builds `--platform cpu,nvidia` instead of the
# default build: the NVIDIA platform linked against that CUDA build of torch
# and imported without a GPU (tests/test_platform_nvidia_linked.py), the
# harness and the tests run on that module.
#
#   INFINIOPS_RELEASE_JOBS="3.12:2.11.0 3.13:2.15.0:same" bash .ci/releases.sh
#
# Each job is PYTHON:TORCH[:same][:nvidia]; the default covers the range
# (docs/torch-releases.md).
#
# Each job's wheels (torch and the CUDA libraries it depends on, about 3 GB)
# are downloaded into a directory kept across runs,
# $INFINIOPS_CI_WHEELS/py<PYTHON>-torch<TORCH> (default
# ~/.cache/infiniops-codegen-ci/wheels; pip's own HTTP cache does not keep
# them behind every proxy), and installed from there: a later run downloads
# nothing it has. Directories of releases no longer in the default list are
# removed.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/lib.sh

DEFAULT_JOBS="3.12:2.11.0 3.10:2.12.1 3.11:2.14.1:same:nvidia 3.13:2.15.0:same"
read -r -a JOBS <<< "${INFINIOPS_RELEASE_JOBS:-$DEFAULT_JOBS}"
if [ "${#JOBS[@]}" -eq 0 ]; then
    echo "FAILED: INFINIOPS_RELEASE_JOBS names no job (PYTHON:TORCH[:same][:nvidia] ...)" >&2
    exit 1
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/infiniops-releases.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
WHEELS=${INFINIOPS_CI_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/infiniops-codegen-ci/wheels}
mkdir -p "$WHEELS"
# This machine's pip configuration may cap torch at the release on its disk
# (/etc/xdg/pip): the jobs read no configuration file (the environment's
# PIP_* settings still apply).
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1

# A build made with the main job's torch (2.13.0): each job checks that its
# torch refuses to load it.
FOREIGN=$(realpath -m "${INFINIOPS_FOREIGN_BUILD_DIR:-build}")
if [ ! -f "$FOREIGN/torch-build.json" ]; then
    echo "FAILED: no build in $FOREIGN (the main job's 'infiniops-codegen build' makes it)" >&2
    exit 1
fi

# The interpreter of a Python version: python3.X on PATH, else pyenv's.
python_of() {
    local version=$1 found
    if found=$(command -v "python$version" 2> /dev/null) && "$found" -c "" 2> /dev/null; then
        echo "$found"
        return
    fi
    for found in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/"python$version"; do
        if [ -x "$found" ]; then
            echo "$found"
            return
        fi
    done
    echo "FAILED: no Python $version (python$version on PATH, or pyenv's)" >&2
    return 1
}

# venv_with_torch VENV PYTHON TORCH WHEELS: a new venv with torch, from the
# kept downloads only. The first run downloads the wheels (`pip download`
# fetches what the directory lacks) and unpacks them once into WHEELS/site
# (`pip install --target`); a complete directory is marked (WHEELS/complete,
# naming the requirement), and later runs neither ask the index again nor
# unpack 4 GB: the unpacked files are hard-linked into the venv's
# site-packages (a second or so). Nothing in a venv writes into a file it
# did not create (pip replaces files, Python writes its caches anew), so the
# kept copy stays as pip unpacked it. The venv gets its pip after the link
# (ensurepip): a venv's own setuptools (Python 3.10, 3.11) would clash with
# the kept copy's.
venv_with_torch() {
    local venv=$1 python=$2 torch=$3 wheels=$4 site
    kept_torch "$python" "$torch" "$wheels" &&
        "$python" -m venv --without-pip "$venv" &&
        site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))') &&
        cp -al "$wheels/site/." "$site/" &&
        "$venv/bin/python" -m ensurepip --default-pip > /dev/null &&
        "$venv/bin/python" -c "import torch; print('torch', torch.__version__, 'from the kept copy')"
}

kept_torch() {  # PYTHON TORCH WHEELS: the kept downloads, unpacked
    local python=$1 torch=$2 wheels=$3 pip
    if [ "$(cat "$wheels/complete" 2> /dev/null)" = "torch==$torch" ] && [ -d "$wheels/site" ]; then
        return 0
    fi
    pip=$WORK/pip-$torch  # a pip of this Python (the job's venv has none yet)
    rm -rf "$wheels/complete" "$wheels/site" "$wheels/site.partial" "$pip" &&
        "$python" -m venv "$pip" &&
        "$pip/bin/pip" download -q -d "$wheels" "torch==$torch" &&
        "$pip/bin/pip" install -q --no-index --find-links "$wheels" \
            --target "$wheels/site.partial" "torch==$torch" &&
        rm -rf "$wheels/site.partial/bin" "$pip" &&
        mv "$wheels/site.partial" "$wheels/site" &&
        echo "torch==$torch" > "$wheels/complete"
}

# --job PYTHON:TORCH[:same][:nvidia]: one release's job (each job runs as a
# script of its own, so that set -e holds inside it).
if [ "${1:-}" = --job ]; then
    # The tests each job runs on its build.
    TESTS=(tests/test_opinfo_conformance.py tests/test_runtime_*.py
        tests/test_platform_nvidia_linked.py
        tests/test_torch_releases.py::test_a_module_built_against_another_release_is_refused)
    IFS=: read -r py torch marks <<< "$2"
    venv=$WORK/venv-$torch
    build=$WORK/build-$torch
    same=no
    build_options=()
    nvidia_build=  # the tests of the nvidia link and load skip while empty
    IFS=: read -r -a marks <<< "$marks"
    for mark in "${marks[@]}"; do
        case $mark in
            same) same=yes ;;
            nvidia)
                build_options=(--platform cpu,nvidia)
                nvidia_build=$build
                ;;
            *)
                echo "FAILED: job $2: unknown mark '$mark' (same, nvidia)" >&2
                exit 1
                ;;
        esac
    done
    step "venv and torch $torch (from the kept downloads)" \
        venv_with_torch "$venv" "$(python_of "$py")" "$torch" "$WHEELS/py$py-torch$torch"
    # No build isolation: the kept copy has setuptools (torch's, and the
    # Python 3.10/3.11 wheels'), so pip need not make a build environment.
    step "the tool (test extras)" "$venv/bin/pip" install -q --no-build-isolation -e '.[test]'
    installed=$("$venv/bin/python" -c "import torch; print(torch.__version__)")
    case $installed in
        "$torch" | "$torch"+*) ;;
        *)
            echo "FAILED: installing the tool replaced torch $torch with $installed" >&2
            exit 1
            ;;
    esac
    "$venv/bin/infiniops-codegen" --version
    if [ "$same" = yes ]; then
        "$venv/bin/infiniops-codegen" generate --check
    elif "$venv/bin/infiniops-codegen" generate --check; then
        echo "torch $torch: generated/ is up to date (its job may be marked :same)"
    else
        echo "torch $torch: its schemas differ (above); the build generates into its build directory"
    fi
    # The covering selection (every path of the default set,
    # tests/test_covering.py), the ops the job's tests name and those whose
    # schemas this torch changes (render/pipeline.py): what a build of the
    # whole default set would prove, at a fraction of its compile and test
    # time.
    ops="covering,$("$venv/bin/python" tests/named_ops.py "${TESTS[@]%%::*}" tests/conftest.py \
        tests/runtime_conftest_helpers.py)"
    step "build ${build_options[*]:-(cpu)}, --ops covering and the tests' ops" \
        "$venv/bin/infiniops-codegen" build --build-dir "$build" --ops "$ops" "${build_options[@]}"
    step "harness" "$venv/bin/python" -m infiniops_codegen.harness \
        --build-dir "$build" --skips tests/skips.yaml
    # The main job's build (torch 2.13.0) must be refused by this torch; a
    # job marked nvidia checks its module's link and load too. One process
    # (-n 0): the other lane keeps the second core busy, and a worker's
    # start (torch's import, the collection) is CPU it would not get back.
    step "OpInfo conformance, runtime tests, the 2.13.0 build refused${nvidia_build:+, nvidia loaded}" \
        env INFINIOPS_BUILD_DIR="$build" INFINIOPS_FOREIGN_BUILD_DIR="$FOREIGN" \
        INFINIOPS_NVIDIA_BUILD_DIR="$nvidia_build" \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 0 "${TESTS[@]}"
    exit 0
fi

# The kept downloads of releases CI no longer tests (not in the default
# list) are removed; a run of some jobs only keeps the others' downloads.
read -r -a DEFAULT <<< "$DEFAULT_JOBS"
for kept in "$WHEELS"/*/; do
    wanted=no
    for job in "${DEFAULT[@]}"; do
        IFS=: read -r py torch _ <<< "$job"
        if [ "$(basename "$kept")" = "py$py-torch$torch" ]; then
            wanted=yes
        fi
    done
    if [ -d "$kept" ] && [ "$wanted" = no ]; then
        echo "removing the kept downloads of a release CI no longer tests: $kept"
        rm -rf "$kept"
    fi
done
echo "release jobs: ${JOBS[*]}; torch downloads kept in $WHEELS"
for job in "${JOBS[@]}"; do
    IFS=: read -r py torch _ <<< "$job"
    budget=()  # a job of the default list has one (.ci/budget); another none
    if ci_budget_minutes "release-$torch" > /dev/null 2>&1; then
        budget=(--budget "release-$torch")
    fi
    step "${budget[@]}" "torch $torch on Python $py" bash "$0" --job "$job"
done
echo "releases: every job passed"
