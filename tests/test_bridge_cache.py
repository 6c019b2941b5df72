"""The bridge cache's key, lookup and publish (infiniops_codegen/bridge_cache.py):
the key changes with each input that changes the objects and not with the
project's directories; an entry appears complete or not at all, a damaged one
is dropped, and a build that finds the entry locked does not wait."""

from __future__ import annotations

import fcntl
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from infiniops_codegen import bridge_cache
from infiniops_codegen.bridge_cache import Inputs

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
