"""`infiniops-codegen trace -- python script.py`: a model's ATen ops, each
marked in the project / expressible / not expressible, as text and JSON;
--write appends the missing out= overloads to a spec file that then loads.

The expected marks are not written here: they are derived from the specs
(pipeline.load_opset) and the schemas (schema_db), as `list --available`
derives what it lists."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from environment_skips import requires
from infiniops_codegen.model import coverage
from infiniops_codegen.trace import marks as model_trace
from infiniops_codegen.render import pipeline

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "op_specs"

# Embedding -> Linear -> SiLU -> LayerNorm -> softmax, plus torch.logit (an
# op whose out= overload the default specs lack); argv[1]: the exit status,
# argv[2] == "raise": an exception after the first forward.
MODEL = """\
import sys
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.proj = nn.Linear(16, 16)
        self.act = nn.SiLU()
        self.norm = nn.LayerNorm(16)

    def forward(self, ids):
        h = self.embed(ids)
        h = h + self.act(self.proj(h))
        h = self.norm(h)
        probs = torch.softmax(h @ self.embed.weight.t(), dim=-1)
        return torch.logit(probs, eps=1e-6)


torch.manual_seed(0)
model = Tiny().eval()
with torch.no_grad():
    for step in range(3):
        out = model(torch.randint(0, 32, (2, 5)))
        if len(sys.argv) > 2 and sys.argv[2] == "raise":
            raise RuntimeError("the model failed on purpose")
print("model output", tuple(out.shape))
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p]
    )
    env["NO_COLOR"] = "1"
    return env


def _trace(tmp_path, *args, specs=SPECS) -> subprocess.CompletedProcess:
    """The CLI, as a user runs it, from tmp_path (where the scripts are)."""
    return subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.cli", "trace", "--specs", str(specs)]
        + list(args),
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


@pytest.fixture(scope="module")
def opset():
    return pipeline.load_opset(SPECS, "all")


def _expected(opset, out: str) -> str:
    """The mark the specs give the out= overload `out`."""
    ops = {op.aten: op for op in opset.ops if op.aten}
    if out in ops and ops[out].source != "<all>":
        return "in_project"
    if out in {a.aten for a in coverage.available(opset.ops)}:
        return "expressible"
    return "not_expressible"


def _json(tmp_path, *command, specs=SPECS) -> tuple[dict, subprocess.CompletedProcess]:
    run = _trace(tmp_path, "--json", "--", *command, specs=specs)
    return json.loads(run.stdout), run


def test_text_report_marks_the_ops_and_passes_the_output_through(
    tmp_path, model, opset
):
    run = _trace(tmp_path, "--", "python", "model.py")
    assert run.returncode == 0, run.stderr
    assert "model output (2, 5, 32)" in run.stdout  # the script's own output
    rows = {}
    for line in run.stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0].isdigit() and parts[1].startswith("aten."):
            rows[parts[1]] = (int(parts[0]), line)
    # an op of the default specs: mm.out serves aten.mm (nn.Linear's matmul)
    assert _expected(opset, "mm.out") == "in_project"
    mm = {op.aten: op for op in opset.ops}["mm.out"]
    kind = "native" if mm.native else "fallback"
    assert f"in the project: {kind}" in rows["aten.mm.default"][1]
    assert "mm.out" in rows["aten.mm.default"][1]
    # expressible, absent from the default specs: logit.out, as list
    # --available says
    available = subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.cli", "list", "--available"]
        + ["--specs", str(SPECS), "--match", "logit"],
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert "logit.out" in available.stdout, available.stdout + available.stderr
    assert "expressible, not in the specs" in rows["aten.logit.default"][1]
    assert "add 'logit.out'" in rows["aten.logit.default"][1]
    # a view: no compute
    assert "not expressible" in rows["aten.t.default"][1]
    assert "view" in rows["aten.t.default"][1]
    # sorted by count (most first), then name
    keys = [(-count, name) for name, (count, _) in rows.items()]
    assert keys == sorted(keys)
    # the summary counts the rows
    summary = run.stdout.strip().splitlines()[-1]
    assert summary.startswith(
        f"{len(rows)} ops, {sum(c for c, _ in rows.values())} calls"
    )


def test_json_counts_and_marks_agree_with_the_specs(tmp_path, model, opset):
    data, run = _json(tmp_path, "python", "model.py")
    assert run.returncode == 0, run.stderr
    assert "model output" in run.stderr  # the script's stdout, off the JSON
    assert data["exit_status"] == 0
    ops = {o["op"]: o for o in data["ops"]}
    assert ops and all(o["calls"] > 0 for o in ops.values())
    assert data["calls"] == sum(o["calls"] for o in ops.values())
    assert sum(data["counts"].values()) == len(ops)
    # dispatch level: what nn.Linear and nn.LayerNorm call inside
    assert ops["aten.addmm.default"]["calls"] == 3
    assert ops["aten.native_layer_norm.default"]["calls"] == 3
    for o in ops.values():
        if o["out"] is not None:
            assert o["mark"] == _expected(opset, o["out"]), o
        else:
            assert o["mark"] == "not_expressible" and o["reason"], o
    assert ops["aten.add.Tensor"]["out"] == "add.out"
    assert ops["aten.logit.default"]["mark"] == "expressible"
    assert data["missing"]["logit.out"] == ["aten.logit.default"]
    native = {op.aten for op in opset.ops if op.native and op.source != "<all>"}
    for o in ops.values():
        if o["mark"] == "in_project":
            assert (o["kind"] == "native") == (o["out"] in native), o


def test_write_appends_the_missing_overloads_and_the_specs_load(tmp_path, model):
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    target = specs / "llm.yaml"
    before = target.read_text()
    data, _ = _json(tmp_path, "python", "model.py", specs=specs)
    run = _trace(
        tmp_path, "--write", str(target), "--", "python", "model.py", specs=specs
    )
    assert run.returncode == 0, run.stderr
    after = target.read_text()
    assert after.startswith(before)  # comments and entries kept, text appended
    added = after[len(before) :].splitlines()
    hinted = model_trace.hinted_for_all(specs)
    expected = sorted(o for o in data["missing"] if o not in hinted)
    assert [line.split()[1] for line in added] == expected
    logit = next(o for o in data["ops"] if o["op"] == "aten.logit.default")
    assert f"  - logit.out  # {logit['calls']} calls (aten.logit.default)" in added
    for out in set(data["missing"]) & set(hinted):  # named, left out
        assert f"{out} is left out" in run.stdout
    loaded = {op.aten: op for op in pipeline.load_opset(specs).ops}
    assert all(loaded[out].source.endswith("llm.yaml") for out in expected)
    # a second trace finds them in the project and adds nothing twice
    again = _trace(
        tmp_path, "--write", str(target), "--", "python", "model.py", specs=specs
    )
    assert again.returncode == 0, again.stderr
    assert "nothing to add" in again.stdout
    assert target.read_text() == after
    assert "in the project: fallback" in next(
        line for line in again.stdout.splitlines() if "aten.logit.default" in line
    )


def test_write_creates_a_spec_file(tmp_path, model):
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    run = _trace(tmp_path, "--write", "specs/model.yaml", "--", "model.py", specs=specs)
    assert run.returncode == 0, run.stderr
    text = (specs / "model.yaml").read_text()
    assert text.startswith("ops:\n  - ")
    assert "logit.out" in {op.aten for op in pipeline.load_opset(specs).ops}


def test_appended_text_keeps_what_follows_the_list():
    traced = model_trace.Traced("aten.logit.default", 4, model_trace.EXPRESSIBLE)
    text = "# top\nops:\n- abs.out  # kept\n# between\nsettings: {shard_size: 8}\n"
    new = model_trace.appended_text(text, {"logit.out": [traced]})
    assert new == text.replace(
        "# kept\n", "# kept\n- logit.out  # 4 calls (aten.logit.default)\n"
    )
    with pytest.raises(model_trace.WriteError, match="block list"):
        model_trace.appended_text("ops: [abs.out]\n", {"logit.out": [traced]})


def test_a_failing_script_is_reported_with_what_it_called(tmp_path, model):
    run = _trace(tmp_path, "--", "python", "model.py", "3")
    assert run.returncode == 1
    assert "'python model.py 3' exited with status 3" in run.stderr
    assert "aten.mm.default" in run.stdout
    data, run = _json(tmp_path, "python", "model.py", "0", "raise")
    assert run.returncode == 1
    assert "the model failed on purpose" in run.stderr  # its traceback
    assert data["exit_status"] == 1
    ops = {o["op"]: o for o in data["ops"]}
    assert ops["aten.addmm.default"]["calls"] == 1  # one forward, then raised


def test_python_dash_m(tmp_path, model):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "infer.py").write_text(MODEL)
    data, run = _json(tmp_path, "python", "-m", "pkg.infer")
    assert run.returncode == 0, run.stderr
    assert any(o["op"] == "aten.mm.default" for o in data["ops"])


def test_usage_errors(tmp_path, model):
    run = _trace(tmp_path, "--", "bash", "run.sh")
    assert run.returncode == 2 and "is not a Python command" in run.stderr
    run = _trace(tmp_path, "--", "python", "absent.py")
    assert run.returncode == 2 and "no such script: absent.py" in run.stderr
    run = _trace(tmp_path, "--write", "elsewhere.yaml", "--", "python", "model.py")
    assert run.returncode == 2 and "directly in" in run.stderr
    assert not (tmp_path / "elsewhere.yaml").exists()


HF_MODEL = """\
import torch
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(
    vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval()
with torch.no_grad():
    logits = model(torch.randint(0, 64, (1, 8))).logits
print("logits", tuple(logits.shape))
"""


@requires("transformers")
def test_a_tiny_hugging_face_llama(tmp_path, opset):
    (tmp_path / "llama.py").write_text(HF_MODEL)
    data, run = _json(tmp_path, "python", "llama.py")
    assert run.returncode == 0, run.stderr
    assert "logits (1, 8, 64)" in run.stderr
    ops = {o["op"]: o for o in data["ops"]}
    assert data["counts"]["in_project"] > 0 and all(
        o["calls"] > 0 for o in ops.values()
    )
    for o in ops.values():
        if o["out"] is not None:
            assert o["mark"] == _expected(opset, o["out"]), o
    # the SiLU of each layer's MLP, served by the specs' silu.out
    assert ops["aten.silu.default"]["mark"] == _expected(opset, "silu.out")
    assert ops["aten.silu.default"]["calls"] == 2
