"""Builds a small spec set in a temporary directory (one build, shared):

- the harness must fail on a wrong wrapper: a test-only spec whose fallback
  swaps two arguments is reported, while a correct op in the same build passes;
- adding one op recompiles only the shard it lands in (plus the small
  aggregate dispatch/bindings TUs), read from Ninja's log.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen import manifest

SPEC = """
ops:
  - sub.out
  - abs.out
  - signature: "swapped_sub(Tensor input, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [sub]
    reference: "torch.sub(input, other)"
    fallback: |
      at::sub_out(out, other, input);  // deliberately swapped
"""

ROOT = Path(__file__).resolve().parent.parent


def _build(specs: Path, build: Path) -> None:
    """`infiniops-codegen build` in a fresh interpreter (the session may
    already hold the default module)."""
    proc = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.cli", "build", "--specs", str(specs)]
        + ["--build-dir", str(build), "--no-smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture(scope="module")
def broken_build(tmp_path_factory):
    base = tmp_path_factory.mktemp("broken")
    specs = base / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text(SPEC)
    # One op per shard on average: several shards, so stability is visible.
    (specs / "settings.yaml").write_text("settings:\n  shard_size: 1\n")
    build = base / "build"
    _build(specs, build)
    return build


def _harness(build: Path, op_name: str) -> dict:
    """Run the harness on one op in a subprocess; returns its findings."""
    code = f"""
import json, sys, torch
from infiniops_codegen.runtime import load
from infiniops_codegen import manifest
from infiniops_codegen.harness import run
m = load({str(build)!r})
op = manifest.of_build({str(build)!r}).op({op_name!r})
plan = run.find_plan(op, torch.float32)
outcome = run.check(m, op, "float32", plan)
print(json.dumps({{"checked": len(outcome.checked), "failures": outcome.failures}}))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_swapped_arguments_fail_the_harness(broken_build):
    found = _harness(broken_build, "swapped_sub")
    assert found["failures"], "the harness accepted a wrapper with swapped arguments"
    assert any("Mismatched elements" in f for f in found["failures"])


def test_correct_op_in_the_same_build_passes(broken_build):
    found = _harness(broken_build, "sub")
    assert found["failures"] == []
    assert found["checked"] > 0


def test_selection_build_leaves_committed_generated_alone(broken_build):
    assert "swapped_sub" not in manifest.generated().names
    assert (broken_build / "generated" / "manifest.json").is_file()


def _ninja_entries(build: Path) -> list[str]:
    lines = (build / ".ninja_log").read_text().splitlines()
    return [l.split("\t")[3] for l in lines if not l.startswith("#")]


def test_adding_an_op_recompiles_only_its_shard(broken_build):
    shards_before = manifest.of_build(broken_build).shard_count
    seen = len(_ninja_entries(broken_build))
    specs = broken_build.parent / "specs"
    with (specs / "ops.yaml").open("a") as f:
        f.write("  - neg.out\n")
    _build(specs, broken_build)
    built = manifest.of_build(broken_build)
    assert built.shard_count == shards_before
    neg_shard = built.op("neg").shard
    rebuilt = [e for e in _ninja_entries(broken_build)[seen:] if e.endswith(".o")]
    shards = [e for e in rebuilt if "/shard_" in e]
    assert len(shards) == 1, rebuilt
    assert shards[0].endswith(f"shard_{neg_shard:03d}.cpp.o"), rebuilt
    others = [e for e in rebuilt if e not in shards]
    assert all(e.endswith(("/ops.cpp.o", "/bindings.cpp.o")) for e in others), others
