"""Shared fixtures of the generator tests (tests/test_generator_*.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

# The package is a flat layout at the repo root; make it importable without
# an install, whatever directory pytest was started from.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@pytest.fixture(autouse=True)
def _forget_the_current_project():
    """A CLI run inside a test makes its --project the current one
    (project.use) for the rest of the process: later tests must find this
    repository's again."""
    yield
    from infiniops_codegen import project

    project.use(None)


def pytest_configure(config):
    """The suite's builds bypass the shared bridge cache (bridge_cache.py),
    so that each builds what it tests, as without the cache; the tests of the
    cache (tests/test_bridge_cache*.py) turn it on into their tmp_path. Its
    directory points into a temporary directory all the same: no test writes
    to the user's cache."""
    import os
    import tempfile

    os.environ["INFINIOPS_NO_BRIDGE_CACHE"] = "1"
    os.environ["INFINIOPS_BRIDGE_CACHE_DIR"] = tempfile.mkdtemp(
        prefix="infiniops-test-bridge-cache-"
    )


def pytest_unconfigure(config):
    import os

    path = os.environ.get("INFINIOPS_BRIDGE_CACHE_DIR", "")
    if "infiniops-test-bridge-cache-" in path:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def basic_specs(tmp_path: Path) -> Path:
    """A private copy of tests/fixtures/specs/basic/ (safe to edit)."""
    dest = tmp_path / "specs" / "basic"
    shutil.copytree(FIXTURES / "specs" / "basic", dest)
    return dest


def invoke(runner: CliRunner, *args: str):
    """Run `infiniops-codegen ARGS`; the result's output has stdout+stderr."""
    from infiniops_codegen.cli import main

    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def tree(root: Path) -> dict[str, bytes]:
    """Relative POSIX path -> bytes of every file under root."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def make_project(
    root: Path, specs: dict[str, str], kernels: dict[str, str] | None = None
) -> Path:
    """A user's project at root (docs/projects.md), laid out as by default:
    pyproject.toml with an empty [tool.infiniops-codegen] table, each spec
    text as op_specs/<name>, each kernel text as cpp/kernels/<platform/file>."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.infiniops-codegen]\n")
    for name, text in specs.items():
        (root / "op_specs").mkdir(exist_ok=True)
        (root / "op_specs" / name).write_text(text, encoding="utf-8")
    for rel, text in (kernels or {}).items():
        path = root / "cpp" / "kernels" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def helpers() -> SimpleNamespace:
    """`invoke`, `tree` and `project`, for test modules (conftest is not
    importable)."""
    return SimpleNamespace(invoke=invoke, tree=tree, project=make_project)


# --- Runtime tests (tests/test_runtime_*.py) ---------------------------------
# The built module, loaded once per session (built first when build/ has none).
# Helpers live in tests/runtime_conftest_helpers.py.


@pytest.fixture(scope="session")
def ops():
    if str(REPO / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "tests"))
    from runtime_conftest_helpers import load_or_build

    module = load_or_build()
    module.set_handle_reuse(True)
    return module


def pytest_terminal_summary(terminalreporter):
    """The counts of the correctness harness and the fuzz tests, when they ran."""
    _fuzz_summary(terminalreporter)
    # Only when the harness ran: importing it would search samples.
    harness = sys.modules.get("test_harness")
    for line in harness.summary_lines() if harness is not None else []:
        terminalreporter.write_line(line)


def _fuzz_summary(terminalreporter):
    # Only modules pytest collected are in sys.modules; importing the others
    # here would just add import time.
    runtime = sys.modules.get("test_fuzz_runtime")
    if runtime is not None and runtime.STATS["calls"]:
        s = runtime.STATS
        terminalreporter.write_line(
            f"runtime fuzz: {s['calls']} fuzzed calls of {s['ops']} ops "
            f"({s['examples']} examples, {s['seconds']:.1f} s in the worker)"
            + (
                "; from_blob wrappers: {rebound} re-bound, {fresh} fresh, "
                "{dropped} not kept".format(**s["wrapper_pool"])
                if "wrapper_pool" in s
                else ""
            )
        )
    reentrancy = sys.modules.get("test_fuzz_reentrancy")
    if reentrancy is not None and reentrancy.STATS["calls"]:
        s = reentrancy.STATS
        terminalreporter.write_line(
            f"re-entrancy fuzz: {s['calls']} calls of {s['ops']} ops with hostile "
            f"arguments ({s['seconds']:.1f} s in the worker; oracle: "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["by_oracle"].items()))
            + f"; {s['excluded']} changes left out by tests/skips.yaml)"
        )
    specs = sys.modules.get("test_fuzz_specs")
    if specs is not None and specs.STATS["documents"]:
        s = specs.STATS
        terminalreporter.write_line(
            f"spec fuzz: {s['documents']} documents generated: "
            f"{s['successes']} succeeded, {s['errors']} failed with located errors"
        )
