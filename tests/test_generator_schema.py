"""The schema oracle (torchgen, cached on disk): its size and its cache's
recovery from corrupt or foreign files."""

from __future__ import annotations

import pickle

import pytest

from infiniops_codegen.schema.db import SchemaDB, load_schema_db, torch_version
from torch_facts import out_overloads, version

# The installed torch's out= overloads, as its dispatcher registers them.
OUT_OVERLOADS = len(out_overloads())


def test_schema_db_holds_every_out_overload():
    db = load_schema_db()
    assert db.torch_version == torch_version() == version()  # torch.__version__
    assert set(db.out_overloads) == out_overloads()
    assert {"abs.out", "add.out", "topk.values", "sum.IntList_out"} <= set(
        db.out_overloads
    )
    assert "add.Tensor" not in db.out_overloads and "add.Tensor" in db.all_names
    assert db.out_overloads["add.out"].cpp_name == "add_out"
    assert list(db.out_overloads) == sorted(db.out_overloads)


GARBAGE = {
    "text": b"this is not a pickle",
    "empty": b"",
    "truncated": pickle.dumps(list(range(100)))[:20],
    "missing module": b"cnosuch_module_for_test\nThing\n.",
    "bad constructor call": b"cbuiltins\nint\n(S'x'\ntR.",
    "foreign object": pickle.dumps({"torch_version": "2.13.0"}),
}


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A cache file built once from scratch in a private cache dir."""
    cache_dir = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INFINIOPS_CODEGEN_CACHE", str(cache_dir))
        assert len(load_schema_db().out_overloads) == OUT_OVERLOADS
    files = list(cache_dir.glob("schemas-*.pickle"))
    assert len(files) == 1, files
    return files[0]


@pytest.fixture
def cache(built_cache, tmp_path, monkeypatch):
    """The path of a valid cache file in a per-test cache dir."""
    path = tmp_path / "cache" / built_cache.name
    path.parent.mkdir()
    path.write_bytes(built_cache.read_bytes())
    monkeypatch.setenv("INFINIOPS_CODEGEN_CACHE", str(path.parent))
    return path


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
def test_a_corrupt_cache_file_is_rebuilt(cache, garbage):
    assert len(load_schema_db().out_overloads) == OUT_OVERLOADS  # valid at first
    cache.write_bytes(garbage)
    db = load_schema_db()
    assert len(db.out_overloads) == OUT_OVERLOADS
    with cache.open("rb") as f:  # and the rebuilt file is valid again
        assert isinstance(pickle.load(f), SchemaDB)


def test_an_unwritable_cache_dir_only_costs_time(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache dir should be")
    monkeypatch.setenv("INFINIOPS_CODEGEN_CACHE", str(blocker / "cache"))
    assert len(load_schema_db().out_overloads) == OUT_OVERLOADS
