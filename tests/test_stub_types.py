"""The type stub accepts torch's calls (issue 16, point 4): mypy checks a
file of the calls a PyTorch user makes against generated/infiniops.pyi, and
rejects a call the module rejects (so the check can fail)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

STUB = Path(__file__).resolve().parent.parent / "generated" / "infiniops.pyi"

ACCEPTED = """
import torch
import infiniops as ops

x = torch.randn(3, 4)
o = torch.empty(3, 4)
v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
a: torch.Tensor = ops.pow(x, 2, out=o)
b: torch.Tensor = ops.pow(x, x)
c: torch.Tensor = ops.sum(x)
d: torch.Tensor = ops.sum(x, dim=None, out=torch.empty(()))
e: torch.Tensor = ops.max(x, 1, out=(v, i)).values
f: torch.Tensor = ops.max(x, 1).indices
g: torch.Tensor = ops.add(x, 2.0)
h: torch.Tensor = ops.add(x, x, alpha=2, out=o, implementation="torch")
k: torch.Tensor = ops.clamp(x, -1.0, 1.0)
m: torch.Tensor = ops.clamp(x, torch.zeros(4), None)
"""

REJECTED = """
import torch
import infiniops as ops

ops.maximum(torch.randn(3), "two")
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> subprocess.CompletedProcess:
    """One mypy run over both files (most of a run is reading torch's own
    stubs): accepted.py and rejected.py beside the stub."""
    where = tmp_path_factory.mktemp("stub")
    shutil.copy(STUB, where / "infiniops.pyi")
    (where / "accepted.py").write_text(ACCEPTED)
    (where / "rejected.py").write_text(REJECTED)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
         "--ignore-missing-imports", "accepted.py", "rejected.py"],
        cwd=where, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def _errors(result: subprocess.CompletedProcess, file: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(f"{file}:")]


# mypy is in the dev extras (pip install -e '.[dev]'): required, no skip.
def test_the_stub_accepts_torchs_calls(checked):
    assert checked.returncode in (0, 1), checked.stdout + checked.stderr
    assert _errors(checked, "accepted.py") == [], checked.stdout


def test_the_stub_rejects_a_wrong_call(checked):
    errors = _errors(checked, "rejected.py")
    assert checked.returncode == 1 and errors, checked.stdout
    assert all("maximum" in line for line in errors if ": error:" in line), errors
