"""The type stub accepts torch's calls (issue 16, point 4): mypy checks a
file of the calls a PyTorch user makes against generated/infiniops.pyi, and
rejects a call the module rejects (so the check can fail)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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


def _mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    shutil.copy(STUB, tmp_path / "infiniops.pyi")
    (tmp_path / "use.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
         "--ignore-missing-imports", "use.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


# mypy is in the dev extras (pip install -e '.[dev]'): required, no skip.
def test_the_stub_accepts_torchs_calls(tmp_path):
    result = _mypy(tmp_path, ACCEPTED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_stub_rejects_a_wrong_call(tmp_path):
    result = _mypy(tmp_path, REJECTED)
    assert result.returncode == 1 and "maximum" in result.stdout, result.stdout
