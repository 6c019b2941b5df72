"""Determinism and stability of the generated tree: byte-identical output
across runs, hash seeds and spec locations; no rewrites when nothing changed;
no absolute paths or timestamps; shards that stay put when an op is added;
and the committed generated/ matching its specs (the CI regeneration check).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.render import pipeline

REPO = Path(__file__).resolve().parent.parent
BASIC = REPO / "tests" / "fixtures" / "specs" / "basic"
AGGREGATES = {
    "bindings.cpp",
    "infiniops.pyi",
    "manifest.json",
    "native_kernels.h",
    "ops.cpp",
    "ops.h",
    "sources.cmake",
    "torch_fallback.h",
    "torch_library.cpp",
}
OLD_NS = 1_000_000_000 * 1_000_000_000  # 2001-09-09, far before any real write


def generate_in_subprocess(specs: Path, out: Path, cwd: Path, seed: str) -> None:
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "infiniops_codegen.cli", "generate"]
    cmd += ["--specs", str(specs), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_two_generations_are_byte_identical(tmp_path, helpers):
    """Different processes, hash seeds, working dirs and spec locations."""
    outs = []
    for i, seed in enumerate(["1", "2"]):
        where = tmp_path / f"run{i}" / ("deeper/" * i)
        specs = where / "basic"
        shutil.copytree(BASIC, specs)
        outs.append(where / "out")
        generate_in_subprocess(specs, outs[-1], cwd=where, seed=seed)
    first, second = helpers.tree(outs[0]), helpers.tree(outs[1])
    assert len(first) >= 10
    assert first.keys() == second.keys()
    differing = [rel for rel in first if first[rel] != second[rel]]
    assert not differing


def stamps(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.stat().st_ino)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def age(root: Path) -> None:
    """Backdate every file, so that any rewrite shows in its mtime."""
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(OLD_NS, OLD_NS))


def test_a_second_generate_rewrites_nothing(tmp_path, basic_specs, runner, helpers):
    out = tmp_path / "out"
    args = ["generate", "--specs", basic_specs, "--out", out]
    assert helpers.invoke(runner, *args).exit_code == 0
    age(out)
    before = stamps(out)
    result = helpers.invoke(runner, *args)
    assert result.exit_code == 0, result.output
    assert f"0 written, 0 removed, {len(before)} unchanged" in result.output
    assert stamps(out) == before


def test_only_the_changed_file_is_rewritten(tmp_path, basic_specs, runner, helpers):
    out = tmp_path / "out"
    args = ["generate", "--specs", basic_specs, "--out", out]
    assert helpers.invoke(runner, *args).exit_code == 0
    original = (out / "ops.cpp").read_bytes()
    (out / "ops.cpp").write_bytes(original + b"// edit\n")
    age(out)
    before = stamps(out)
    # --force: a hand edit is otherwise refused (test_cli_friction.py)
    result = helpers.invoke(runner, *args, "--force")
    assert "1 written, 0 removed" in result.output
    after = stamps(out)
    assert [rel for rel in before if before[rel] != after[rel]] == ["ops.cpp"]
    assert (out / "ops.cpp").read_bytes() == original


TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}:\d{2}\b")


def assert_portable(files: dict[str, bytes], forbidden: list[str]) -> None:
    for rel, data in files.items():
        text = data.decode("utf-8")
        for needle in forbidden:
            assert needle not in text, f"{rel} contains {needle!r}"
        match = TIMESTAMP.search(text)
        assert match is None, f"{rel} contains a timestamp: {match.group()}"


def test_output_has_no_absolute_paths_or_timestamps(
    tmp_path, basic_specs, runner, helpers
):
    out = tmp_path / "out"
    result = helpers.invoke(runner, "generate", "--specs", basic_specs, "--out", out)
    assert result.exit_code == 0
    forbidden = [str(tmp_path), str(REPO), "/root", "/work", "/home", "/tmp"]
    forbidden.append(os.path.expanduser("~"))
    assert_portable(helpers.tree(out), forbidden)
    assert_portable(helpers.tree(REPO / "generated"), forbidden)


def test_committed_generated_tree_is_up_to_date(runner, helpers):
    """The CI regeneration check: op_specs/ rendered == generated/. Where the
    installed torch's schemas differ from those generated/ follows (another
    release, docs/torch-releases.md) the check fails by design, naming them;
    it is made with a release whose schemas are generated/'s."""
    from infiniops_codegen.render import drift, pipeline

    found = drift.between(
        REPO / "generated", pipeline.generate(REPO / "op_specs").files
    )
    if found:
        pytest.skip(
            f"generated/ follows other schemas than the installed torch's "
            f"({drift.counted(found)} differ): 'generate --check' names them"
        )
    result = helpers.invoke(runner, "generate", "--check")
    assert result.exit_code == 0, result.output
    assert "is up to date" in result.output


def shard_of(files: dict[str, str], name: str) -> str:
    import json

    ops = json.loads(files["manifest.json"])["ops"]
    (shard,) = [op["shard"] for op in ops if op["name"] == name]
    return f"torch_fallback/shard_{shard:03d}.cpp"


@pytest.mark.parametrize("aten, name", [("exp.out", "exp"), ("cat.out", "cat")])
def test_adding_an_op_changes_only_its_shard(tmp_path, basic_specs, aten, name):
    before = pipeline.generate(basic_specs).files
    with (basic_specs / "ops.yaml").open("a") as f:
        f.write(f"  - {aten}\n")
    after = pipeline.generate(basic_specs).files
    shard = shard_of(after, name)
    assert f"void {name}(" in after[shard]
    assert before.keys() - after.keys() == set()
    assert after.keys() - before.keys() <= {shard}
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    assert shard in changed
    assert changed - {shard} <= AGGREGATES
    untouched = [r for r in after if r.startswith("torch_fallback/") and r != shard]
    assert untouched, "the fixture should have other shards"
    for rel in untouched:
        assert before[rel] == after[rel], f"{rel} changed"


def test_an_extension_leaves_the_tables_alone(tmp_path, basic_specs):
    # The bridge and the precompiled header include these tables: a rewrite
    # (e.g. of their header naming the spec directories) rebuilds both.
    from infiniops_codegen.opspec import extensions

    ext = tmp_path / "demo"
    (ext / "op_specs").mkdir(parents=True)
    (ext / "infiniops-extension.yaml").write_text("name: demo_ext\n")
    (ext / "op_specs" / "demo.yaml").write_text("ops:\n  - signbit.out\n")
    before = pipeline.generate(basic_specs).files
    after = pipeline.generate(basic_specs, None, extensions.load_all((ext,))).files
    assert "demo_ext/op_specs/" in after["ops.h"].split("\n", 1)[0]
    for rel in ("dtype_table.h", "platform_table.h", "torch_tables.h"):
        assert before[rel] == after[rel], f"{rel} changed"
