"""Zero heap allocations per call in the library's own layer (reuse path).

A counting allocator (tests/alloc_counter.c, LD_PRELOADed into a child
interpreter) counts the mallocs of 1,000 calls of our op and of 1,000 calls of
the floor: a bare binding that unpacks the same tensors and calls the same
at::<op>_out (the bench's floor extension). Whatever ATen allocates inside its
kernel appears on both sides, so equal counts mean our layer (argument
conversion, handles, dispatch, wrapper) allocated nothing.
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


@pytest.fixture(scope="module")
def counts(ops, tmp_path_factory):
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
    env = subprocess_env()
    env["LD_PRELOAD"] = str(shim)
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
    rows = [
        json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")
    ]
    return {row["op"]: row for row in rows}


OPS = [
    "exp",
    "abs",
    "sub",
    "add[torch]",
    "clamp",
    "mm",
    "sum",
    "cat",
    "native_layer_norm",
]


@pytest.mark.parametrize("op", OPS)
def test_no_allocations_beyond_the_floor(counts, op):
    row = counts[op]
    assert row["ours"] == row["floor"], (
        f"{op}: {row['ours']} allocations in 1,000 calls, the floor (same ATen "
        f"call) {row['floor']}: the library layer allocates per call"
    )


def test_native_kernel_allocates_nothing(counts):
    assert counts["add[native]"]["ours"] == 0
