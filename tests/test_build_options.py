"""`build --sanitize`, `--cmake-arg` and reconfiguring on changed flags.

Configure-only runs of the committed generated/ (seconds each, nothing
compiled): the sanitizer flags on every TU and link, the vptr exception of
the bridge alone, a --cmake-arg in CMake's cache and out of it again, and a
changed CXXFLAGS reaching the compile commands (CMake itself reads it only
into a new cache). The usage errors, and the run line a sanitized build
prints, executed. That a sanitized module loads and runs under that line is
the build's own smoke check, which .ci/sanitizers.sh runs on the default set.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from infiniops_codegen.toolchain import builder
from infiniops_codegen.base import sanitize
from infiniops_codegen.cli import EXIT_USAGE, main
from infiniops_codegen.base.locations import SUPPORT_DIR
from runtime_conftest_helpers import REPO, opt_flags

GENERATED = REPO / "generated"
BRIDGE = (SUPPORT_DIR / "cpp" / "torch").resolve()


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """Configures here see none of the caller's compiler settings."""
    for name in builder.CONFIGURE_ENV:
        monkeypatch.delenv(name, raising=False)


def _config(directory: Path, **kwargs) -> builder.BuildConfig:
    return builder.BuildConfig(
        build_dir=directory,
        generated_dir=GENERATED,
        kernel_root=REPO / "cpp" / "kernels",
        ccache=False,
        **kwargs,
    )


def _configure(config: builder.BuildConfig) -> list[str]:
    """builder.configure; what it said."""
    lines: list[str] = []
    builder.configure(config, lines.append)
    return lines


def _entries(directory: Path) -> list[dict]:
    return json.loads((directory / "compile_commands.json").read_text())


def _is_bridge(entry: dict) -> bool:
    path = Path(entry["file"]).resolve()
    if path.parent == BRIDGE:
        return True
    # The bridge's Python-facing files compile as one unity TU.
    return path.parent.name == "Unity" and all(
        Path(line.split('"')[1]).resolve().parent == BRIDGE
        for line in path.read_text().splitlines()
        if line.startswith("#include")
    )


def _links(directory: Path) -> dict[str, str]:
    """Output name -> command of the library's and the module's link steps."""
    proc = subprocess.run(
        ["ninja", "-C", str(directory), "-t", "commands"],
        capture_output=True,
        text=True,
        check=True,
    )
    links = {}
    for line in proc.stdout.splitlines():
        if " -shared " in line or line.endswith(" -shared"):
            out = shlex.split(line.split("&&")[1] if "&&" in line else line)
            links[Path(out[out.index("-o") + 1]).name] = line
    return links


def _cache(directory: Path) -> str:
    return (directory / "CMakeCache.txt").read_text()


@pytest.fixture(scope="module")
def configured_dir(tmp_path_factory) -> Path:
    """One build directory, configured again by each test in turn."""
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.fail("cmake and ninja are required (see the README's install step)")
    return tmp_path_factory.mktemp("options") / "b"


def test_sanitizers_reach_every_tu_and_link(configured_dir):
    """Every TU the project compiles (bridge, bindings, dispatch, shards,
    kernels, the precompiled header) and both links get the sanitizers; only
    the bridge drops UBSan's vptr check; -O levels are unchanged; a
    --sanitize thread build then replaces them, and a plain one removes them."""
    d = configured_dir
    said = _configure(_config(d, sanitize=("address", "undefined")))
    assert any("sanitizers address,undefined" in line for line in said), said
    entries = _entries(d)
    files = [Path(e["file"]).name for e in entries]
    # bridge (unity + aten_convert), bindings, dispatch, shards, kernels, PCH
    assert "bindings.cpp" in files and "ops.cpp" in files
    assert any(f.startswith("shard_") for f in files)
    assert "add.cc" in files and "aten_convert.cpp" in files
    assert any(f.startswith("cmake_pch") for f in files), files
    bridge = 0
    for e in entries:
        flags = shlex.split(e["command"])
        assert "-fsanitize=address,undefined" in flags, e["file"]
        assert "-fno-omit-frame-pointer" in flags, e["file"]
        if _is_bridge(e) and Path(e["file"]).name != "aten_convert.cpp":
            bridge += 1
            assert flags.index("-fno-sanitize=vptr") > flags.index(
                "-fsanitize=address,undefined"
            ), e["file"]
        else:
            assert "-fno-sanitize=vptr" not in flags, e["file"]
        if _is_bridge(e):
            assert opt_flags(e["command"])[-1] == "-O3", e["file"]
    assert bridge == 1  # the unity TU
    links = _links(d)
    module = [n for n in links if n.startswith("infiniops.")]
    library = [n for n in links if n.startswith("libinfiniops.so")]
    assert module and library, sorted(links)
    for name in module + library:
        assert "-fsanitize=address,undefined" in shlex.split(links[name]), name

    said = _configure(_config(d, sanitize=("thread",)))
    assert said, "a changed sanitizer must reconfigure"
    for e in _entries(d):
        flags = shlex.split(e["command"])
        assert "-fsanitize=thread" in flags and "-fno-sanitize=vptr" not in flags
        assert not [f for f in flags if "address" in f], e["file"]

    _configure(_config(d))
    for e in _entries(d):
        assert "-fsanitize" not in e["command"], e["file"]
    assert "INFINI_OPS_SANITIZE:STRING=\n" in _cache(d)


def test_changed_cxxflags_configure_afresh(configured_dir, monkeypatch):
    """CMake reads CXXFLAGS only into a new cache: a change must start the
    configuration afresh (it used to be ignored, the arguments being equal)."""
    d = configured_dir
    _configure(_config(d))
    assert _configure(_config(d)) == []  # nothing changed: CMake not run
    monkeypatch.setenv("CXXFLAGS", "-DINFINIOPS_PROBE_FLAG=1")
    said = _configure(_config(d))
    assert len(said) == 1 and "CXXFLAGS changed: configuring afresh" in said[0]
    for e in _entries(d):
        assert "-DINFINIOPS_PROBE_FLAG=1" in e["command"], e["file"]
    assert _configure(_config(d)) == []
    monkeypatch.delenv("CXXFLAGS")
    said = _configure(_config(d))
    assert "CXXFLAGS changed" in said[0]
    for e in _entries(d):
        assert "INFINIOPS_PROBE_FLAG" not in e["command"], e["file"]


def test_cmake_args_reach_the_cache_and_leave_it(configured_dir):
    d = configured_dir
    args = (("INFINIOPS_TEST_PROBE", "a b;c"), ("INFINIOPS_TEST_SWITCH:BOOL", "ON"))
    said = _configure(_config(d, user_cmake_args=args))
    assert said
    cache = _cache(d)
    assert "INFINIOPS_TEST_PROBE:UNINITIALIZED=a b;c\n" in cache
    assert "INFINIOPS_TEST_SWITCH:BOOL=ON\n" in cache
    # One dropped from the command line is dropped from the cache.
    said = _configure(_config(d, user_cmake_args=args[1:]))
    assert said
    assert "INFINIOPS_TEST_PROBE" not in _cache(d)
    assert "INFINIOPS_TEST_SWITCH:BOOL=ON\n" in _cache(d)
    _configure(_config(d))
    assert "INFINIOPS_TEST_SWITCH" not in _cache(d)


@pytest.mark.parametrize(
    "option, expected",
    [
        ("INFINI_OPS_TORCH_OPT_LEVEL=0", "use --opt-level"),
        ("INFINI_OPS_SANITIZE=address", "use --sanitize"),
        ("INFINI_OPS_GENERATED_DIR=/x", "use --specs, --ops or --build-dir"),
        ("WITH_NVIDIA:BOOL=ON", "use --platform"),
    ],
)
def test_cmake_arg_of_a_variable_the_build_sets(tmp_path, option, expected):
    """A usage error naming the option that sets it; nothing written."""
    result = CliRunner().invoke(
        main,
        ["--project", str(REPO), "build", "--ops", "add", "--cmake-arg", option]
        + ["--build-dir", str(tmp_path / "b")],
    )
    assert result.exit_code == EXIT_USAGE, result.output
    assert f"--cmake-arg {option}" in result.output
    assert expected in result.output
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--sanitize", "address,thread"], "address and thread cannot be combined"),
        (["--sanitize", "thread,address"], "address and thread cannot be combined"),
        (["--sanitize", "memory"], "use address, undefined, thread"),
        (["--sanitize", ""], "use address, undefined, thread"),
        (["--cmake-arg", "FOO"], "use NAME=VALUE"),
        (["--cmake-arg", "-DFOO=1"], "without -D (--cmake-arg FOO=1)"),
    ],
)
def test_invalid_options_are_usage_errors(tmp_path, args, expected):
    result = CliRunner().invoke(
        main, ["build", "--build-dir", str(tmp_path / "b"), *args]
    )
    assert result.exit_code == EXIT_USAGE, result.output
    assert f"error: {args[0]}" in result.output
    assert expected in result.output
    assert not (tmp_path / "b").exists()


def test_sanitizer_names():
    assert sanitize.parse("undefined,address") == ("address", "undefined")
    assert sanitize.parse(" thread , undefined ") == ("undefined", "thread")
    assert sanitize.parse("address,address") == ("address",)


@pytest.mark.no_sanitizer(reason="runs the line in a child of a plain process")
def test_build_prints_the_line_that_runs_python_under_it(tmp_path, monkeypatch):
    """The configure is real; the compile is left out (the smoke check of a
    real sanitized build is .ci/sanitizers.sh's). The printed line, and the
    script beside the module, start an interpreter with the compiler's ASan
    and UBSan runtimes loaded and the options set."""
    monkeypatch.setattr(builder, "compile_all", lambda *a, **k: 0)
    d = tmp_path / "b"
    result = CliRunner().invoke(
        main,
        ["--project", str(REPO), "build", "--ops", "add", "--no-ccache"]
        + ["--no-smoke", "--sanitize", "address,undefined", "--build-dir", str(d)],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("sanitized ("))
    assert lines[head] == "sanitized (address,undefined): run Python under it with"
    command = lines[head + 1].strip()
    assert command.endswith(" ...")
    words = shlex.split(command[: -len(" ...")])
    assert words[0] == "env" and words[-1] == sys.executable
    env = dict(w.split("=", 1) for w in words[1:-1])
    cxx = "g++" if shutil.which("g++") else "c++"
    want = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(
            [cxx, f"-print-file-name={name}"], capture_output=True, text=True
        ).stdout.strip()
        want.append(Path(path).resolve())
    assert [Path(p).resolve() for p in env["LD_PRELOAD"].split(":")] == want
    asan = dict(kv.split("=", 1) for kv in env["ASAN_OPTIONS"].split(":"))
    ubsan = dict(kv.split("=", 1) for kv in env["UBSAN_OPTIONS"].split(":"))
    assert asan["detect_leaks"] == "0" and asan["halt_on_error"] == "1"
    assert ubsan["halt_on_error"] == "1" and ubsan["print_stacktrace"] == "1"
    for options in (asan, ubsan):
        if "suppressions" in options:
            assert Path(options["suppressions"]).is_file()
    assert env["PYTHONMALLOC"] == "malloc"
    assert f"{d / sanitize.SCRIPT} ... (the same line)" in lines[head + 2]

    probe = (
        "import ctypes, os, sys\n"
        "p = ctypes.CDLL(None)\n"
        "print(hasattr(p, '__asan_init'), hasattr(p, '__ubsan_handle_add_overflow'),"
        " os.environ['ASAN_OPTIONS'], sys.executable)\n"
    )
    # The line as printed, then the script with options of the caller's own,
    # which come last (they win).
    plain = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD",)}
    runs = [
        (words, None),
        ([str(d / sanitize.SCRIPT)], {**plain, "ASAN_OPTIONS": "verbosity=0"}),
    ]
    for argv, child_env in runs:
        proc = subprocess.run(
            [*argv, "-c", probe], capture_output=True, text=True, env=child_env
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        got = proc.stdout.split()
        assert got[:2] == ["True", "True"], proc.stdout
        assert got[3] == sys.executable
        if child_env is not None:
            assert got[2] == env["ASAN_OPTIONS"] + ":verbosity=0", got[2]
    record = sanitize.read(d)
    assert record["sanitizers"] == ["address", "undefined"]
    assert record["env"] == env

    # Built again without --sanitize: no record is left behind.
    result = CliRunner().invoke(
        main,
        ["--project", str(REPO), "build", "--ops", "add", "--no-ccache"]
        + ["--no-smoke", "--build-dir", str(d)],
    )
    assert result.exit_code == 0, result.output
    assert "sanitized" not in result.output
    assert sanitize.read(d) is None and not (d / sanitize.SCRIPT).exists()


@pytest.mark.no_sanitizer(reason="needs a process without the sanitizer runtimes")
def test_load_refuses_a_sanitized_build_without_its_runtimes(tmp_path):
    """Loading it would abort the process ('ASan runtime does not come
    first'): runtime.load raises ImportError with the way to run it."""
    from infiniops_codegen.runtime import load

    (tmp_path / "infiniops.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    env = sanitize.run_env(("address", "undefined"), "g++")
    sanitize.write(tmp_path, env)
    with pytest.raises(ImportError) as info:
        load(tmp_path)
    message = str(info.value)
    assert "sanitized build (address,undefined)" in message
    assert str(tmp_path / sanitize.SCRIPT) in message
    assert "LD_PRELOAD=" in message
