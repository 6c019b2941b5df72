"""The package's stages import down the pipeline only, and the run-time side
none of the generator: the import-linter contracts of pyproject.toml
([tool.importlinter]) hold, with no exemption, and they catch a
back-reference (docs/architecture.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "infiniops_codegen"
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def _lint(root: Path) -> subprocess.CompletedProcess:
    """lint-imports over the package under root, with the repository's
    contracts."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(REPO / 'pyproject.toml')!r}, "
        "no_cache=True, no_logo=True))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )


def test_the_contracts_hold():
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout, done.stdout


def test_no_contract_exempts_an_import():
    contracts = CONFIG["contracts"]
    assert {c["id"] for c in contracts} == {
        "stages",
        "runtime-apart",
        "generator-apart",
    }
    for contract in contracts:
        assert "ignore_imports" not in contract, contract["id"]


def _copy(tmp_path: Path) -> Path:
    """The package's Python files, copied: a tree to add a bad import to."""
    shutil.copytree(
        PACKAGE,
        tmp_path / PACKAGE.name,
        ignore=lambda d, names: [
            n for n in names if n == "__pycache__" or n in ("support", "docs", "data")
        ],
    )
    return tmp_path


@pytest.mark.parametrize(
    "module, line, broken",
    [
        # a shared fact reaching up into a stage
        ("base/errors.py", "from ..toolchain import builder", "never up"),
        # the model reaching for its rendering
        ("model/resolve.py", "from ..render import sources", "never up"),
        # the loader in a user's process importing the generator's model
        ("runtime/loader.py", "from ..model import ops", "nothing of the generator"),
        # the generator depending on the run-time side
        (
            "render/writer.py",
            "from ..runtime import observe",
            "nothing of the run-time",
        ),
    ],
)
def test_a_back_reference_breaks_a_contract(tmp_path, module, line, broken):
    root = _copy(tmp_path)
    path = root / PACKAGE.name / module
    # At the end, inside a function: imported lazily still counts.
    path.write_text(path.read_text() + f"\n\ndef _late():\n    {line}\n")
    done = _lint(root)
    assert done.returncode == 1, done.stdout + done.stderr
    (verdict,) = [l for l in done.stdout.splitlines() if l.endswith("BROKEN")]
    assert broken in verdict, done.stdout


def test_a_new_package_must_take_a_place(tmp_path):
    root = _copy(tmp_path)
    (root / PACKAGE.name / "extras").mkdir()
    (root / PACKAGE.name / "extras" / "__init__.py").write_text('"""A new stage."""\n')
    done = _lint(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "extras" in done.stdout, done.stdout
