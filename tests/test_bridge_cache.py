"""The bridge cache's key, lookup and publish
(infiniops_codegen/toolchain/bridge_cache.py): the key changes with each input that changes the objects and not with the
project's directories; an entry appears complete or not at all, a damaged one
is dropped, and a build that finds the entry locked does not wait."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import bridge_cache
from infiniops_codegen.toolchain.bridge_cache import Inputs

COMMAND = (
    "/usr/bin/c++ -DWITH_CPU -I{tool} -I{gen} -O3 -DNDEBUG -fPIC -std=c++20 "
    "-o CMakeFiles/infiniops_bridge.dir/Unity/unity_python_cxx.cxx.o "
    "-c {build}/CMakeFiles/infiniops_bridge.dir/Unity/unity_python_cxx.cxx"
)


def _project(root: Path, tables: str = "// tables\n") -> Inputs:
    build = root / "build"
    gen = build / "generated"
    gen.mkdir(parents=True)
    for name in bridge_cache.TABLES:
        (gen / name).write_text(f"{name} {tables}")
    command = COMMAND.format(tool="/opt/tool/cpp", gen=gen, build=build)
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler, "a C++ compiler is needed"
    return Inputs((command,), build, gen, compiler, '{"version": "2.13.0"}')


def _key(inputs: Inputs) -> str:
    return bridge_cache.key(bridge_cache.document(inputs))


def test_the_key_ignores_the_project_directories(tmp_path):
    assert _key(_project(tmp_path / "a")) == _key(_project(tmp_path / "b"))


def test_the_key_is_stable_across_calls(tmp_path):
    inputs = _project(tmp_path)
    assert _key(inputs) == _key(inputs)


@pytest.mark.parametrize(
    "old, new",
    [
        pytest.param("-O3 -DNDEBUG", "-O2 -DNDEBUG", id="opt-level"),
        pytest.param("-DWITH_CPU", "-DWITH_CPU -DWITH_NVIDIA", id="platforms"),
        pytest.param("-fPIC", "-fPIC -fsanitize=address", id="sanitizer"),
        pytest.param("/opt/tool/cpp", "/opt/other/cpp", id="tool-path"),
    ],
)
def test_a_flag_changes_the_key(tmp_path, old, new):
    inputs = _project(tmp_path)
    (command,) = inputs.commands
    assert old in command
    other = replace(inputs, commands=(command.replace(old, new),))
    assert _key(other) != _key(inputs)


def test_the_tables_torch_and_sources_change_the_key(tmp_path):
    base = _key(_project(tmp_path / "a"))
    assert _key(_project(tmp_path / "b", tables="// other\n")) != base
    inputs = _project(tmp_path / "c")
    other_torch = replace(inputs, torch_record='{"version": "2.14.0"}')
    assert _key(other_torch) != base
    support = tmp_path / "support"
    shutil.copytree(bridge_cache.SUPPORT_CPP, support)
    doc = bridge_cache.document(inputs, support)
    assert bridge_cache.key(doc) == base
    (support / "torch" / "call.cpp").write_text("// edited\n", encoding="utf-8")
    assert bridge_cache.key(bridge_cache.document(inputs, support)) != base


def _objects(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for name, size in (("unity_python_cxx.cxx.o", 300), ("cmake_pch.hxx.gch", 500)):
        path = tmp_path / "objs" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x" * size)
        files[name] = path
    return files


def test_a_published_entry_is_found_and_holds_the_files(tmp_path):
    root = tmp_path / "cache"
    assert bridge_cache.lookup(root, "k1") is None
    entry = bridge_cache.publish(root, "k1", {"format": 1}, _objects(tmp_path))
    assert entry == root / "k1"
    assert bridge_cache.lookup(root, "k1") == entry
    assert (entry / "cmake_pch.hxx.gch").stat().st_size == 500
    assert not list(root.glob("tmp-*")), "the private directory was renamed"
    # A second publish of the same key keeps the first entry.
    assert bridge_cache.publish(root, "k1", {"format": 1}, _objects(tmp_path)) == entry


def test_a_damaged_entry_is_dropped(tmp_path):
    root = tmp_path / "cache"
    entry = bridge_cache.publish(root, "k1", {}, _objects(tmp_path))
    (entry / "unity_python_cxx.cxx.o").write_bytes(b"x")  # truncated
    assert bridge_cache.lookup(root, "k1") is None
    assert not entry.exists()


def test_a_locked_entry_is_not_waited_for(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    with open(root / "k1.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert bridge_cache.publish(root, "k1", {}, _objects(tmp_path)) is None
    assert not (root / "k1").exists()
    assert bridge_cache.publish(root, "k1", {}, _objects(tmp_path)) == root / "k1"


def _racer(root: str, start, results) -> None:
    """One of several processes publishing the same key at once."""
    src = Path(root).parent / f"objs-{os.getpid()}"
    src.mkdir()
    files = {}
    for name, size in (
        ("unity_python_cxx.cxx.o", 3 << 20),
        ("cmake_pch.hxx.gch", 8 << 20),
    ):
        (src / name).write_bytes(bytes([os.getpid() % 251]) * size)
        files[name] = src / name
    start.wait()
    entry = bridge_cache.publish(Path(root), "k1", {"format": 1}, files)
    results.put((os.getpid(), str(entry) if entry else None))


def test_concurrent_publishers_leave_one_whole_entry(tmp_path):
    """Six processes publish the same key at the same moment: each gets the
    entry or is told another holds the lock; one entry results, whole (all
    its bytes from one publisher), and no private directory is left."""
    ctx = multiprocessing.get_context("fork")
    root = tmp_path / "cache"
    start = ctx.Barrier(6)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_racer, args=(str(root), start, results)) for _ in range(6)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    got = [results.get(timeout=5) for _ in procs]
    assert {e for _, e in got} <= {str(root / "k1"), None}, got
    assert any(e for _, e in got), got
    entry = bridge_cache.lookup(root, "k1")
    assert entry is not None
    assert [p.name for p in root.iterdir() if p.is_dir()] == ["k1"]
    bytes_of = {p.name: set((entry / p.name).read_bytes()) for p in entry.iterdir()}
    writer = bytes_of["unity_python_cxx.cxx.o"]
    assert len(writer) == 1 and bytes_of["cmake_pch.hxx.gch"] == writer


def test_an_entry_without_its_key_file_is_not_an_entry(tmp_path):
    root = tmp_path / "cache"
    entry = bridge_cache.publish(root, "k1", {}, _objects(tmp_path))
    (entry / bridge_cache.KEY_FILE).unlink()
    assert bridge_cache.lookup(root, "k1") is None
    assert bridge_cache.entries(root) == []


def test_trim_keeps_the_newest_used(tmp_path):
    """Entries by last use (lookup touches one); the one just published is
    spared whatever its age; what goes is renamed away first."""
    root = tmp_path / "cache"
    for i, name in enumerate(("a", "b", "c", "d", "e")):
        entry = bridge_cache.publish(root, name, {}, _objects(tmp_path))
        os.utime(entry, (1000 + i, 1000 + i))
    bridge_cache.lookup(root, "a")  # used now: the newest
    removed = bridge_cache.trim(root, keep_n=3)
    assert sorted(p.name for p in removed) == ["b", "c"]
    assert sorted(p.name for p in bridge_cache.entries(root)) == ["a", "d", "e"]
    os.utime(root / "e", (1, 1))
    removed = bridge_cache.trim(root, keep_n=2, spare=root / "e")
    assert [p.name for p in removed] == ["d"]
    assert sorted(p.name for p in bridge_cache.entries(root)) == ["a", "e"]
    assert not [p for p in root.iterdir() if p.name.startswith("tmp-")]


def test_the_cache_directory_and_bypass_come_from_the_environment(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(bridge_cache.DIR_ENV, raising=False)
    monkeypatch.setenv("INFINIOPS_CODEGEN_CACHE", str(tmp_path / "tool"))
    assert bridge_cache.cache_root() == tmp_path / "tool" / "bridge"
    monkeypatch.setenv(bridge_cache.DIR_ENV, str(tmp_path / "mine"))
    assert bridge_cache.cache_root() == tmp_path / "mine"
    monkeypatch.setenv(bridge_cache.BYPASS_ENV, "1")
    assert bridge_cache.bypassed_by_env()
    monkeypatch.setenv(bridge_cache.BYPASS_ENV, "")
    assert not bridge_cache.bypassed_by_env()
    monkeypatch.setenv(bridge_cache.KEEP_ENV, "2")
    assert bridge_cache.keep() == 2


def test_only_the_project_paths_become_placeholders(tmp_path):
    """A torch installed under the build directory (not in its CMakeFiles/)
    stays literal: two such builds with torches at different places must
    not share a key."""
    build = tmp_path / "b"
    gen = build / "generated"
    command = (
        f"c++ -I{gen} -I{build}/torch/include -include "
        f"{build}/CMakeFiles/x.dir/cmake_pch.hxx -c {build}/CMakeFiles/u.cxx"
    )
    got = bridge_cache.normalise_command(command, build, gen)
    assert got == (
        f"c++ -I@generated@ -I{build}/torch/include -include "
        "@build@/CMakeFiles/x.dir/cmake_pch.hxx -c @build@/CMakeFiles/u.cxx"
    )


def test_a_relative_build_dir_spells_the_same_key(tmp_path, monkeypatch):
    """`--build-dir build-all` and the same directory spelled absolute give
    one key: CMake writes absolute paths into the unity file and the PCH's
    header, and the relative spelling is a substring of them that must not
    be replaced inside them (it was: the full set's build in CI missed the
    entry the default build had just published)."""
    monkeypatch.chdir(tmp_path)
    build = tmp_path / "build-all"
    gen = build / "generated"
    text = (
        f'#include "{gen}/ops.h"\n#include "{build}/CMakeFiles/x.dir/cmake_pch.hxx"\n'
    )
    expected = '#include "@generated@/ops.h"\n#include "@build@/CMakeFiles/x.dir/cmake_pch.hxx"\n'
    assert bridge_cache._normalise_text(text, build, gen) == expected
    relative = Path("build-all")
    assert (
        bridge_cache._normalise_text(text, relative, relative / "generated") == expected
    )


def _wheel_command(site: str, project: str, build: str) -> str:
    """A wheel's bridge compile (support/CMakeLists.txt, INFINI_OPS_WHEEL):
    torch and the tool in site, their paths mapped away."""
    return (
        f"/usr/bin/g++ -I{site}/infiniops_codegen/support/cpp -I{project}/generated "
        f"-I{site}/torch/include -O3 -ffile-prefix-map={site}/= "
        f"-ffile-prefix-map={project}/= "
        f"-ffile-prefix-map={site}/infiniops_codegen/support/=infiniops_codegen/support/ "
        f"-ffile-prefix-map={build}/= -std=c++20 "
        f"-o CMakeFiles/infiniops_bridge.dir/Unity/unity_python_cxx.cxx.o "
        f"-c {build}/CMakeFiles/infiniops_bridge.dir/Unity/unity_python_cxx.cxx"
    )


def test_wheel_builds_in_other_environments_share_a_key(tmp_path):
    """Two `pip wheel` builds, each in a build environment of its own (torch
    and the tool in another site-packages) and another project: their
    objects keep no path (all mapped), so their commands normalise alike;
    what the site-packages hold is in the key by content (torch's record
    and version.py, the tool's source digests)."""
    keys = []
    for k in ("a", "b"):
        site = f"/tmp/pip-build-env-{k}/overlay/lib/python3.11/site-packages"
        project, build = tmp_path / f"proj-{k}", tmp_path / f"proj-{k}/build/wheel"
        command = _wheel_command(site, str(project), str(build))
        torch_dir = f"{site}/torch/share/cmake/Torch"
        found = bridge_cache.mapped_site([command], torch_dir)
        assert found == Path(site)
        keys.append(
            bridge_cache.normalise_command(command, build, project / "generated", found)
        )
    assert keys[0] == keys[1]
    assert "@site@/torch/include" in keys[0] and "pip-build-env" not in keys[0]
    assert "-ffile-prefix-map=@mapped@=infiniops_codegen/support/" in keys[0]


def test_a_site_packages_not_mapped_away_stays_in_the_key(tmp_path):
    """A build whose objects keep their paths (no prefix map: not a wheel)
    keeps its torch's path in the key: two venvs do not share it."""
    site = "/tmp/venv-a/lib/python3.11/site-packages"
    command = f"/usr/bin/g++ -I{site}/torch/include -c x.cxx"
    torch_dir = f"{site}/torch/share/cmake/Torch"
    assert bridge_cache.mapped_site([command], torch_dir) is None
    got = bridge_cache.normalise_command(command, tmp_path, tmp_path / "g", None)
    assert f"-I{site}/torch/include" in got
