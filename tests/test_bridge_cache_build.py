"""The bridge cache in real builds (builder.build, docs/building.md: the
bridge cache): a cold build compiles the bridge and publishes it; a new
build directory of another op set links the entry, compiles neither the
bridge nor the precompiled header, and its module works; a build whose
bridge commands differ (a flag, another -O level of the wrappers' PCH
sharing), a damaged entry, --no-cache and $INFINIOPS_NO_BRIDGE_CACHE never
link it.

Two real builds (~25 s and ~7 s on 2 cores); the other tests only configure
(a few seconds each). The cache lives in the module's tmp directory."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import bridge_cache, builder
from infiniops_codegen.base import project

pytestmark = pytest.mark.own_build(
    "compiles the bridge cold, by design, with caches of its own"
)

REPO = Path(__file__).resolve().parent.parent
UNITY = "CMakeFiles/infiniops_bridge.dir/Unity/unity_python_cxx.cxx.o"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("bridge-cache") / "cache"
    mp.setenv(bridge_cache.DIR_ENV, str(root))
    mp.delenv(bridge_cache.BYPASS_ENV, raising=False)
    yield root
    mp.undo()


def _request(build_dir: Path, ops: str, **kw) -> builder.BuildRequest:
    return builder.BuildRequest(
        project=project.load(REPO),
        build_dir=build_dir,
        ops=ops,
        ccache=False,
        jobs=2,
        **kw,
    )


def _build(build_dir: Path, ops: str, **kw):
    lines: list[str] = []
    result = builder.build(_request(build_dir, ops, **kw), echo=lines.append)
    return result, lines


@pytest.fixture(scope="module")
def first(cache, tmp_path_factory):
    """A cold cache: abs,add built in full."""
    return _build(tmp_path_factory.mktemp("first") / "build", "abs,add")


@pytest.fixture(scope="module")
def second(first, cache, tmp_path_factory):
    """A new build directory of another op set, after `first`."""
    return _build(tmp_path_factory.mktemp("second") / "build", "add,sub")


def _entry(cache: Path) -> Path:
    (entry,) = bridge_cache.entries(cache)
    return entry


def _cmake_entry(build_dir: Path) -> str:
    return builder._cmake_cache(build_dir).get("INFINI_OPS_BRIDGE_ENTRY", "?")


def _planned(build_dir: Path) -> str:
    """What `ninja` would run now (its dry run's output)."""
    proc = subprocess.run(
        ["ninja", "-C", str(build_dir), "-n"], capture_output=True, text=True
    )
    return proc.stdout


def test_a_cold_build_compiles_the_bridge_and_publishes_it(first, cache):
    result, lines = first
    assert result.bridge_cache == "published", lines
    assert any(l.startswith("bridge cache: miss") for l in lines), lines
    assert (result.build_dir / UNITY).is_file()
    entry = _entry(cache)
    names = {p.name for p in entry.iterdir()}
    assert {"unity_python_cxx.cxx.o", "aten_convert.cpp.o"} <= names, names
    assert {"cmake_pch.hxx", "cmake_pch.hxx.gch"} <= names, names
    # Nothing of the project's directories in what the key hashes.
    key_text = (entry / bridge_cache.KEY_FILE).read_text()
    assert str(result.build_dir) not in key_text
    assert not list(cache.glob("tmp-*")), "the private directory was renamed"


def test_a_new_project_links_the_entry(second, first, cache):
    result, lines = second
    assert result.bridge_cache == "hit", lines
    assert result.smoke.startswith("add ok"), result.smoke
    # Configured once: the first build's hint named the entry to try.
    assert sum(l.startswith("configuring") for l in lines) == 1, lines
    entry = _entry(cache)  # the same entry: one key for both op sets
    assert _cmake_entry(result.build_dir) == str(entry)
    # Neither the bridge, aten_convert nor the PCH compiled here ...
    dot_o = [p.name for p in (result.build_dir / "CMakeFiles").rglob("*.o")]
    assert "unity_python_cxx.cxx.o" not in dot_o and "aten_convert.cpp.o" not in dot_o
    assert not list((result.build_dir / "CMakeFiles").rglob("*.gch"))
    # ... the module is linked from the entry's objects, the shards use its PCH.
    commands = subprocess.run(
        ["ninja", "-C", str(result.build_dir), "-t", "commands"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(entry / "unity_python_cxx.cxx.o") in commands
    assert str(entry / "aten_convert.cpp.o") in commands
    assert f"-include {entry}/cmake_pch.hxx" in commands
    assert "no work to do" in _planned(result.build_dir)
    # GCC took the entry's PCH (a rejected one is parsed as a header, only
    # slower): the shard's dependencies are its ops' headers, not the prelude's.
    deps = subprocess.run(
        ["ninja", "-C", str(result.build_dir), "-t", "deps"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shard = deps[deps.index("shard_000.cpp.o:") :].split("\n\n")[0]
    assert "ATen/ops/add.h" in shard and "ATen/core/Tensor.h" not in shard, shard


def test_the_publisher_keeps_its_own_objects(first, second):
    """Building the first directory again switches nothing (no relink)."""
    result, lines = _build(first[0].build_dir, "abs,add")
    assert result.bridge_cache == "built", lines
    assert result.steps == 0, lines
    assert _cmake_entry(result.build_dir) == ""


def _config(base: builder.BuildResult, build_dir: Path, **kw) -> builder.BuildConfig:
    return builder.BuildConfig(
        build_dir=build_dir,
        generated_dir=base.generated_dir,
        kernel_root=REPO / "cpp" / "kernels",
        ccache=False,
        **kw,
    )


def _configure(config: builder.BuildConfig, use_cache: bool = True):
    lines: list[str] = []
    config, _ = builder._configure_with_cache(config, use_cache, lines.append)
    return config, lines


def test_a_changed_flag_falls_back_to_compiling(second, cache, tmp_path):
    """The same directory, first as it matches the entry, then with a flag
    that changes the bridge's command: the entry is dropped from the build
    and the bridge compiled again; the flag removed, the entry is back."""
    entry = _entry(cache)
    base = second[0]
    plain = _config(base, tmp_path / "b")
    config, lines = _configure(plain)
    assert config.bridge_entry == entry, lines
    assert UNITY not in _planned(plain.build_dir)
    flagged = replace(
        plain, user_cmake_args=(("CMAKE_CXX_FLAGS", "-DINFINIOPS_CACHE_PROBE=1"),)
    )
    config, lines = _configure(flagged)
    assert config.bridge_entry is None, lines
    assert any(l.startswith("bridge cache: miss") for l in lines), lines
    assert _cmake_entry(plain.build_dir) == ""
    assert UNITY in _planned(plain.build_dir)
    assert str(entry) not in _planned(plain.build_dir)
    config, lines = _configure(plain)
    assert config.bridge_entry == entry, lines


def test_another_opt_level_has_its_own_key(second, cache, tmp_path):
    """At -O0 aten_convert does not build the PCH (the wrappers build their
    own at -O0): other commands, another key; the -O3 entry is not used."""
    config, lines = _configure(_config(second[0], tmp_path / "b", opt_level="0"))
    assert config.bridge_entry is None, lines
    assert any(l.startswith("bridge cache: miss") for l in lines), lines
    planned = _planned(config.build_dir)
    assert UNITY in planned and str(_entry(cache)) not in planned


def test_a_damaged_entry_is_dropped_not_linked(second, cache, tmp_path, monkeypatch):
    """A copy of the cache whose entry lost bytes (a full disk, a hand edit):
    the entry is removed and the bridge compiled. An unfinished entry (its
    private directory, not renamed) is never found either."""
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    monkeypatch.setenv(bridge_cache.DIR_ENV, str(copy))
    entry = copy / _entry(cache).name
    with open(entry / "aten_convert.cpp.o", "r+b") as f:
        f.truncate(100)
    config, lines = _configure(_config(second[0], tmp_path / "b"))
    assert config.bridge_entry is None, lines
    assert not entry.exists()
    assert UNITY in _planned(config.build_dir)
    # Unfinished: the same files under tmp-*, as a killed publish leaves them.
    shutil.copytree(_entry(cache), copy / f"tmp-1-{entry.name}")
    config, lines = _configure(_config(second[0], tmp_path / "c"))
    assert config.bridge_entry is None, lines


def test_no_cache_and_the_environment_bypass_it(second, cache, tmp_path, monkeypatch):
    """--no-cache reaches the request; a bypassed build links no entry and
    publishes nothing, here with $INFINIOPS_NO_BRIDGE_CACHE (compiling
    replaced by nothing: what is checked is the configuration)."""
    from click.testing import CliRunner

    from infiniops_codegen.cli import main

    seen = []

    def fake_build(request, echo, verbose=False):
        seen.append(request)
        raise builder.BuildError("stop")

    monkeypatch.setattr(builder, "build", fake_build)
    CliRunner().invoke(main, ["build", "--no-cache", "--ops", "abs"])
    CliRunner().invoke(main, ["build", "--ops", "abs"])
    assert [r.bridge_cache for r in seen] == [False, True]
    monkeypatch.undo()
    monkeypatch.setattr(builder, "compile_all", lambda *a, **k: 0)
    before = sorted(p.name for p in cache.iterdir())
    build_dir = tmp_path / "b"
    monkeypatch.setenv(bridge_cache.BYPASS_ENV, "1")
    result, lines = _build(build_dir, "add,sub", compile_only=True, smoke=False)
    assert result.bridge_cache == "bypassed", lines
    assert _cmake_entry(build_dir) == ""
    assert UNITY in _planned(build_dir)
    assert sorted(p.name for p in cache.iterdir()) == before
    # The control: without the variable the same directory links the entry.
    monkeypatch.delenv(bridge_cache.BYPASS_ENV)
    result, lines = _build(build_dir, "add,sub", compile_only=True, smoke=False)
    assert result.bridge_cache == "hit", lines
    assert _cmake_entry(build_dir) == str(_entry(cache))
