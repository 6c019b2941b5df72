"""Heap allocations per call: our op on each call path against that path's
floor (the bench's floor extension: a bare binding doing the same work).

A counting allocator (tests/alloc_counter.c, LD_PRELOADed into a child
interpreter, tests/alloc_probe.py) counts the allocations of 1,000 calls on
the calling thread, twice:

- as is: the C/C++ heap (malloc, calloc, realloc, the aligned ones), where
  pymalloc serves Python's small objects without calling malloc;
- with PYTHONMALLOC=malloc: every Python object allocation goes through
  malloc too, so the difference between the two runs is the Python
  allocator's calls.

Whatever ATen allocates inside its kernel appears on both sides, so equal
counts mean the library's layer (argument conversion, handles, dispatch,
wrapper) allocates nothing the floor does not. Differences are allowed only
where listed below with their exact size and cause.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime_conftest_helpers import build_dir, subprocess_env

HERE = Path(__file__).resolve().parent
CALLS = 1000
# Its child preloads the counting allocator in place of a sanitizer's (whose
# allocator is the one that counts there).
pytestmark = pytest.mark.no_sanitizer(reason="preloads its own allocator")

# Python allocations per call of ours beyond the floor's, by op: exact, and
# each with its cause. None since unpack_scalar checks Python floats before
# the tensor isinstance (which, for a float, allocated a bound
# __instancecheck__ of torch's metaclass per argument).
PYTHON_EXCESS: dict[str, int] = {}

# The from_blob path without its wrapper pool (set_wrapper_pool(False))
# rebuilds every tensor per call: a TensorImpl, its StorageImpl and its
# version counter, 3 C++ allocations per tensor. With the pool (the default),
# wrappers are re-bound: none.
FROM_BLOB_PER_TENSOR = 3


def _probe(shim: Path, pythonmalloc: str | None) -> dict[str, dict]:
    env = subprocess_env()
    env["LD_PRELOAD"] = str(shim)
    env.pop("PYTHONMALLOC", None)
    if pythonmalloc:
        env["PYTHONMALLOC"] = pythonmalloc
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "alloc_probe.py"),
            str(build_dir()),
            str(build_dir() / "test-floor"),
            str(shim),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    return {row["case"]: row for row in rows}


@pytest.fixture(scope="module")
def counts(ops, tmp_path_factory):
    """case -> {"c": {ours, floor}, "python": {ours, floor}, row fields}."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "a C compiler is needed to build the counting allocator"
    shim = tmp_path_factory.mktemp("alloc") / "alloc_counter.so"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            "-O2",
            "-o",
            str(shim),
            str(HERE / "alloc_counter.c"),
        ],
        check=True,
    )
    c_heap = _probe(shim, None)
    every = _probe(shim, "malloc")
    assert set(c_heap) == set(every)
    result = {}
    for case, row in c_heap.items():
        if "ours" not in row:
            result[case] = {"c": row["count"], "all": every[case]["count"]}
            continue
        sides = [k for k in ("ours", "floor") if k in row]
        result[case] = {
            **row,
            "c": {k: row[k] for k in sides},
            "python": {k: every[case][k] - row[k] for k in sides},
        }
    return result


def test_the_counter_sees_python_objects_only_with_pythonmalloc(counts):
    # 1,000 list((0, 1, 2)): a list object and its item array each.
    objects = counts["python objects"]
    assert objects["c"] == 0  # pymalloc: no malloc for small objects
    assert objects["all"] >= 2 * CALLS


CASES = [
    f"{op}/{path}"
    for op, op_paths in {
        "exp": ("direct", "dispatcher", "from_blob"),
        "abs": ("direct", "dispatcher", "from_blob"),
        "sub": ("direct", "dispatcher", "from_blob"),
        "add": ("native", "direct", "dispatcher", "from_blob"),
        "clamp": ("direct", "dispatcher", "from_blob"),
        "mm": ("direct", "dispatcher", "from_blob"),
        "sum": ("direct", "dispatcher", "from_blob"),
        "cat": ("dispatcher", "from_blob"),
        "topk": ("direct", "dispatcher", "from_blob"),
        "native_layer_norm": ("dispatcher", "from_blob"),
        "mul": ("native", "direct", "dispatcher", "from_blob"),
        "silu": ("native", "direct", "dispatcher", "from_blob"),
        "rms_norm": ("native",),
    }.items()
    for path in op_paths
]


@pytest.mark.parametrize("case", CASES)
def test_no_allocations_beyond_the_floor(counts, case):
    row = counts[case]
    assert row["c"]["ours"] == row["c"]["floor"], (
        f"{case}: {row['c']['ours']} C/C++ heap allocations in {CALLS} calls, "
        f"the floor (same work) {row['c']['floor']}: the library layer allocates"
    )
    excess = PYTHON_EXCESS.get(row["op"], 0) * CALLS
    python = row["python"]
    assert python["ours"] - python["floor"] == excess, (
        f"{case}: {python['ours']} Python allocations in {CALLS} calls, the "
        f"floor {python['floor']} (expected difference {excess})"
    )


def test_every_case_was_counted(counts):
    measured = {c for c, row in counts.items() if "floor" in row}
    assert measured == set(CASES)


@pytest.mark.parametrize("op", ["add", "mul", "silu", "rms_norm"])
def test_native_kernels_allocate_nothing(counts, op):
    assert counts[f"{op}/native"]["c"]["ours"] == 0


FROM_BLOB_OPS = [
    "exp",
    "sub",
    "add",
    "sum",
    "cat",
    "topk",
    "native_layer_norm",
    "rms_norm",
]


@pytest.mark.parametrize("op", FROM_BLOB_OPS)
def test_from_blob_rebinds_without_allocating(counts, op):
    """Composites included (rms_norm has no ATen out= to floor): with the
    wrapper pool, the from_blob path allocates exactly what its inner path
    does (ATen's own), in the steady state."""
    blob = counts[f"{op}/from_blob"]
    inner = counts[f"{op}/{blob['inner']}"]
    assert blob["c"]["ours"] == inner["c"]["ours"], (op, blob, inner)
    assert blob["python"]["ours"] == inner["python"]["ours"]


@pytest.mark.parametrize("op", FROM_BLOB_OPS)
def test_fresh_from_blob_allocates_exactly_the_rebuilt_tensors(counts, op):
    """Without the pool: the inner path plus the rebuild, nothing else."""
    fresh = counts[f"{op}/from_blob_fresh"]
    inner = counts[f"{op}/{fresh['inner']}"]
    rebuilt = FROM_BLOB_PER_TENSOR * fresh["tensors"] * CALLS
    assert fresh["c"]["ours"] - inner["c"]["ours"] == rebuilt
    assert fresh["python"]["ours"] == inner["python"]["ours"]
