"""The C++ example (examples/cpp/) against an installed library.

`cmake --install` of the suite's build directory (the `ops` fixture builds it
when it holds no module) into a temporary prefix; the example configured
with `find_package(InfiniOps)` from that prefix, built with Ninja, and run
with no LD_LIBRARY_PATH at all, so the RPATHs alone must find libinfiniops
and torch. Every check line it prints must be "ok". The installed tree: the
headers and the CMake package are there, and the library needs no Python.

No skips: cmake, ninja and binutils (readelf) are prerequisites of the build
itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from runtime_conftest_helpers import REPO, build_dir

pytestmark = pytest.mark.own_build(
    "builds of its own: the library installed, the C++ example built against it"
)

EXAMPLE = REPO / "examples" / "cpp"
EXE = "infiniops_example"
# The example's checks today: 21. Fewer means checks were dropped (or the
# program stopped early without saying so).
MIN_CHECKS = 21
CHECK_LINE = re.compile(r"^(ok  |FAIL) (.+)$")
SUMMARY_LINE = re.compile(r"^(\d+) passed, (\d+) failed$")


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:] if len(text) > n else text


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run cmd; fail the test with its output's tail when it exits non-zero."""
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd)} exited {proc.returncode}\n"
            f"--- stdout (tail)\n{_tail(proc.stdout)}\n"
            f"--- stderr (tail)\n{_tail(proc.stderr)}",
            pytrace=False,
        )
    return proc


def _env_without_library_path() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    return env


@pytest.fixture(scope="module")
def example(ops, tmp_path_factory) -> SimpleNamespace:
    """Install the build, then configure, build and run the example once."""
    build = build_dir()
    if not any(build.glob("libinfiniops.so*")):
        pytest.fail(f"{build} has no libinfiniops.so: rebuild it", pytrace=False)
    root = tmp_path_factory.mktemp("cpp_example")
    prefix = root / "prefix"
    binary = root / "build"
    _run(["cmake", "--install", str(build), "--prefix", str(prefix)], timeout=300)
    _run(
        ["cmake", "-S", str(EXAMPLE), "-B", str(binary), "-G", "Ninja"]
        + [f"-DCMAKE_PREFIX_PATH={prefix}"],
        timeout=300,
    )
    _run(["ninja", "-C", str(binary)], timeout=600)
    run = subprocess.run(
        [str(binary / EXE)],
        capture_output=True,
        text=True,
        env=_env_without_library_path(),
        timeout=300,
    )
    return SimpleNamespace(prefix=prefix, exe=binary / EXE, run=run)


def _output(run: subprocess.CompletedProcess) -> str:
    return (
        f"exit {run.returncode}\n--- stdout (tail)\n{_tail(run.stdout)}\n"
        f"--- stderr (tail)\n{_tail(run.stderr)}"
    )


def test_example_runs_and_every_check_passes(example):
    run = example.run
    assert run.returncode == 0, _output(run)
    assert "FAIL" not in run.stdout, _output(run)
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    checks = [line for line in lines if CHECK_LINE.match(line)]
    others = [line for line in lines if not CHECK_LINE.match(line)]
    assert all(line.startswith("ok   ") for line in checks), _output(run)
    assert (
        len(checks) >= MIN_CHECKS
    ), f"{len(checks)} check lines, expected at least {MIN_CHECKS}\n" + _output(run)
    # Nothing but check lines and the closing summary, which agrees with them.
    assert len(others) == 1 and others == lines[-1:], _output(run)
    summary = SUMMARY_LINE.match(others[0])
    assert summary, _output(run)
    assert (int(summary[1]), int(summary[2])) == (len(checks), 0), _output(run)


def test_forced_native_errors_name_the_cpp_spelling(example):
    """A C++ caller is told the choices as C++ spells them, not the Python
    keyword's values ('torch', 'default'), which the bindings raise."""
    lines = example.run.stdout.splitlines()
    (thrown,) = [ln for ln in lines if "kNative on exp" in ln]
    # (the example cuts messages at 90 characters)
    assert (
        ": exp(): Implementation::kNative was requested, but this op has no native "
        "kernel; use Implem" in thrown
    ), _output(example.run)
    assert (
        "ok   kNative's error names the alternatives: use Implementation::kTorch "
        "or Implementation::kDefault"
    ) in lines, _output(example.run)


def test_example_found_the_libraries_by_rpath(example):
    # The run had no LD_LIBRARY_PATH: ldd resolves as the loader did.
    ldd = _run(["ldd", str(example.exe)], env=_env_without_library_path()).stdout
    assert "not found" not in ldd, ldd
    lib = re.search(r"libinfiniops\.so\S* => (\S+)", ldd)
    assert lib, ldd
    assert Path(lib[1]).resolve().parent == (example.prefix / "lib").resolve(), ldd


def test_installed_tree(example):
    prefix = example.prefix
    for path in (
        "include/infiniops/ops.h",
        "include/infiniops/core/tensor.h",
        "include/infiniops/torch/aten_convert.h",
        "lib/cmake/InfiniOps/InfiniOpsConfig.cmake",
        "share/infiniops/manifest.json",
    ):
        assert (prefix / path).is_file(), f"{path} not installed under {prefix}"


def test_installed_library_needs_no_python(example):
    lib = example.prefix / "lib" / "libinfiniops.so"
    assert lib.exists(), f"{lib} not installed"
    dynamic = _run(["readelf", "-d", str(lib)]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert any(name.startswith("libtorch_cpu") for name in needed), needed
    assert not any(
        name.startswith(("libpython", "libtorch_python")) for name in needed
    ), needed
    # Nor through its dependencies (libtorch, c10, ...).
    ldd = _run(["ldd", str(lib)], env=_env_without_library_path()).stdout
    assert "not found" not in ldd, ldd
    assert not re.search(r"\blib(python|torch_python)", ldd), ldd


# --- benchmarks/cpp against the same prefix: the wrapper pool's checks and a
# short run of the C++ benchmark (its figures are not asserted: the bench
# measures, docs/performance.md reports).

BENCHMARKS = REPO / "benchmarks" / "cpp"
MIN_POOL_CHECKS = 18


@pytest.fixture(scope="module")
def benchmarks(example, tmp_path_factory) -> Path:
    binary = tmp_path_factory.mktemp("cpp_bench") / "build"
    _run(
        ["cmake", "-S", str(BENCHMARKS), "-B", str(binary), "-G", "Ninja"]
        + [f"-DCMAKE_PREFIX_PATH={example.prefix}"],
        timeout=300,
    )
    _run(["ninja", "-C", str(binary)], timeout=600)
    return binary


@pytest.mark.no_sanitizer(
    reason="links tests/alloc_counter.c, whose malloc family replaces the sanitizer's"
)
def test_wrapper_pool_checks_pass(benchmarks):
    run = subprocess.run(
        [str(benchmarks / "wrapper_pool_check")],
        capture_output=True,
        text=True,
        env=_env_without_library_path(),
        timeout=300,
    )
    assert run.returncode == 0, _output(run)
    checks = [l for l in run.stdout.splitlines() if CHECK_LINE.match(l)]
    assert len(checks) >= MIN_POOL_CHECKS, _output(run)
    assert all(l.startswith("ok   ") for l in checks), _output(run)
    assert f"{len(checks)} checks, 0 failed" in run.stdout, _output(run)


@pytest.mark.no_sanitizer(
    reason="links tests/alloc_counter.c, whose malloc family replaces the sanitizer's"
)
def test_cpp_benchmark_runs(benchmarks):
    run = subprocess.run(
        [str(benchmarks / "from_blob_bench"), "--rounds", "3", "--calls", "200"],
        capture_output=True,
        text=True,
        env=_env_without_library_path(),
        timeout=300,
    )
    assert run.returncode == 0, _output(run)
    rows = [l for l in run.stdout.splitlines() if l.startswith("| ") and "---" not in l]
    ops = [row.split("|")[1].strip() for row in rows[1:]]
    assert ops == ["abs", "add", "sum", "mm", "cat", "native_layer_norm", "rms_norm"]
    for row in rows[1:]:
        # allocations per call, re-bound / fresh / handle: the re-bound
        # wrappers allocate no more than handles do, fresh ones more.
        rebound, fresh, handle = (
            float(x) for x in row.split("|")[-2].strip().split(" / ")
        )
        assert rebound == handle < fresh, row


def test_builder_install_writes_the_package(ops, tmp_path):
    """What `infiniops-codegen build --install PREFIX` does after building."""
    from infiniops_codegen.toolchain import builder

    lines: list[str] = []
    builder.install(build_dir(), tmp_path / "prefix", lines.append)
    assert lines == [f"installing into {tmp_path / 'prefix'}"]
    config = tmp_path / "prefix" / "lib" / "cmake" / "InfiniOps"
    assert (config / "InfiniOpsConfig.cmake").is_file()
    assert (config / "InfiniOpsConfigVersion.cmake").is_file()
    assert any((tmp_path / "prefix" / "lib").glob("libinfiniops.so*"))


def test_install_without_a_library_is_refused(runner):
    from conftest import invoke

    result = invoke(runner, "build", "--compile-only", "--install", "/nonexistent")
    assert result.exit_code == 2, result.output
    assert "--install needs a linked library" in result.output


def test_a_cpp_program_traced_through_the_environment(example, tmp_path):
    """INFINIOPS_TRACE=<path>: a C++ program's calls, one JSON line each, with
    what ran them (docs/observability.md)."""
    trace = tmp_path / "calls.jsonl"
    env = _env_without_library_path()
    env["INFINIOPS_TRACE"] = str(trace)
    run = subprocess.run(
        [str(example.exe)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0 and "FAIL" not in run.stdout, _output(run)
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    first = records[0]  # the example's first call: add by its native kernel
    assert (first["op"], first["aten"], first["implementation"], first["path"]) == (
        "add",
        "aten::add.out",
        "native",
        "core",  # tensors made in C++, taken as they are
    )
    assert [t["shape"] for t in first["tensors"]] == [[2, 4]] * 3
    exp = next(r for r in records if r["op"] == "exp")
    assert exp["implementation"] == "torch" and exp["path"].startswith("from_blob+")
    # The calls that raised are there too, with their errors.
    assert any("require_native" in r.get("error", "") for r in records)
