"""Shared fixtures of the generator tests (tests/test_generator_*.py)."""

from __future__ import annotations

import os
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
    from infiniops_codegen.base import project

    project.use(None)


def pytest_configure(config):
    """The suite's builds share one bridge cache (toolchain/bridge_cache.py) in a
    temporary directory of the run, so the torch bridge is compiled once per
    set of compile commands instead of once per test build: a hit links
    objects built from the same sources with the same commands, which is what
    the cache guarantees (its own tests, tests/test_bridge_cache*.py, cover
    hits, misses and damaged entries in their tmp_path). No test writes to
    the user's cache. The controller makes the directory; pytest-xdist's
    workers inherit it through the environment."""
    import tempfile

    if _is_xdist_worker(config):
        return
    os.environ.pop("INFINIOPS_NO_BRIDGE_CACHE", None)
    suite_cache = Path(tempfile.mkdtemp(prefix="infiniops-test-bridge-cache-"))
    _seed_bridge_cache(suite_cache)
    os.environ["INFINIOPS_BRIDGE_CACHE_DIR"] = str(suite_cache)
    # The suite builds a few sets of compile commands (opt levels,
    # sanitizers, projects with other names): keep every entry for the run.
    os.environ["INFINIOPS_BRIDGE_CACHE_KEEP"] = "32"


def _seed_bridge_cache(dest: Path) -> None:
    """The complete entries of the cache builds outside the suite use (the
    user's, or a CI run's, where the quickstart's build put build/'s)
    hard-linked into the suite's: a test build with the same compile
    commands links their objects instead of compiling the bridge again. The
    source is only read: a build links an entry's objects and never writes
    them (bridge_cache.publish), and the suite's own entries are new
    directories here."""
    from infiniops_codegen.toolchain import bridge_cache

    for entry in bridge_cache.entries(bridge_cache.cache_root()):
        try:
            shutil.copytree(entry, dest / entry.name, copy_function=os.link)
        except OSError:  # another file system: the suite compiles its own
            shutil.rmtree(dest / entry.name, ignore_errors=True)


def pytest_unconfigure(config):

    if _is_xdist_worker(config):
        return
    path = os.environ.get("INFINIOPS_BRIDGE_CACHE_DIR", "")
    if "infiniops-test-bridge-cache-" in path:
        shutil.rmtree(path, ignore_errors=True)


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


# Memory one test process may need at its peak (the opcheck and harness
# tests, a build's compiler beside it): `-n auto` starts no more workers
# than the machine's available memory holds at this size each.
WORKER_MEMORY_BYTES = 6 * 1024**3


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): one worker per CPU this process
    may run on, no more than the available memory holds."""

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    cpus = cpus or os.cpu_count() or 1
    available = _available_memory()
    if available is None:
        return cpus
    return max(1, min(cpus, available // WORKER_MEMORY_BYTES))


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# The suite's longest files (wall seconds of their tests, measured by a
# profile of the suite: docs/building.md#ci), in that order, before the
# others: pytest-xdist hands out files in collection order (loadfile,
# --no-loadscope-reorder in pyproject.toml), so that none of them starts
# when the other worker is nearly done. A stale list costs time, not
# correctness; tests/test_ci.py checks that each file exists.
LONGEST_FIRST = (
    "test_compile.py",
    "test_fuzz_specs.py",
    "test_trace_cli.py",
    "test_runtime_allocations.py",
    "test_tables.py",
    "test_opinfo_conformance.py",
    "test_harness.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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


# The counts printed at the end of a run (the harness's, the fuzzers'). Under
# pytest-xdist the tests run in workers: each sends its lines with its
# results (workeroutput) and the controller prints them all.
_WORKER_SUMMARIES: list[str] = []


def _summary_lines() -> list[str]:
    """The counts of the correctness harness and the fuzz tests, when they
    ran in this process."""
    lines = _fuzz_summary()
    # Only when the harness ran: importing it would search samples.
    harness = sys.modules.get("test_harness")
    lines += harness.summary_lines() if harness is not None else []
    return lines


def pytest_sessionfinish(session):
    if _is_xdist_worker(session.config):
        session.config.workeroutput["infiniops_summary"] = _summary_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _WORKER_SUMMARIES.extend(
        getattr(node, "workeroutput", {}).get("infiniops_summary", [])
    )


def pytest_terminal_summary(terminalreporter):
    for line in _WORKER_SUMMARIES + _summary_lines():
        terminalreporter.write_line(line)


def _fuzz_summary() -> list[str]:
    lines = []
    # Only modules pytest collected are in sys.modules; importing the others
    # here would just add import time.
    runtime = sys.modules.get("test_fuzz_runtime")
    for seed, s in sorted(runtime.STATS.items() if runtime is not None else ()):
        lines.append(
            f"runtime fuzz, seed {seed}: {s['calls']} fuzzed calls of {s['ops']} ops "
            f"({s['examples']} examples, {s['seconds']:.1f} s in the worker)"
            + (
                "; from_blob wrappers: {rebound} re-bound, {fresh} fresh, "
                "{dropped} not kept".format(**s["wrapper_pool"])
                if "wrapper_pool" in s
                else ""
            )
        )
    reentrancy = sys.modules.get("test_fuzz_reentrancy")
    for seed, s in sorted(reentrancy.STATS.items() if reentrancy is not None else ()):
        lines.append(
            f"re-entrancy fuzz, seed {seed}: {s['calls']} calls of {s['ops']} ops "
            f"with hostile arguments ({s['seconds']:.1f} s in the worker; oracle: "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["by_oracle"].items()))
            + f"; {s['excluded']} changes left out by tests/skips.yaml)"
        )
    specs = sys.modules.get("test_fuzz_specs")
    if specs is not None and specs.STATS["documents"]:
        s = specs.STATS
        lines.append(
            f"spec fuzz: {s['documents']} documents generated: "
            f"{s['successes']} succeeded, {s['errors']} failed with located errors"
        )
    return lines
