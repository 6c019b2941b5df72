"""The full set's hints file (`<specs>/all/hints.yaml`): read by `--ops all`
only, attached to the ops the specs do not name, located errors."""

from __future__ import annotations

import pytest

from infiniops_codegen.base.errors import SpecErrors
from infiniops_codegen.render.pipeline import load_opset
from torch_facts import version

SPECS = "ops:\n  - abs.out\n  - {aten: bmm.out, hints: {shapes: {mat2: [2, 6, 5]}}}\n"


def _specs(tmp_path, monkeypatch, hints: str):
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    (specs / "all").mkdir(parents=True)
    (specs / "ops.yaml").write_text(SPECS)
    (specs / "all" / "hints.yaml").write_text(hints)
    return specs


def _errors(specs) -> list[str]:
    with pytest.raises(SpecErrors) as e:
        load_opset(specs, "all")
    return [str(err) for err in e.value.errors]


def test_hints_reach_the_full_set_only(tmp_path, monkeypatch):
    specs = _specs(
        tmp_path,
        monkeypatch,
        "hints:\n  scatter.reduce_out: {reduce: [add, multiply]}\n"
        "  select_backward.out: {shapes: {grad_output: [6]}, index: [1]}\n",
    )
    ops = {op.aten: op for op in load_opset(specs, "all").ops}
    assert ops["scatter.reduce_out"].hints_dict == {"reduce": ["add", "multiply"]}
    assert ops["select_backward.out"].hints_dict["shapes"] == {"grad_output": [6]}
    assert ops["bmm.out"].hints_dict == {"shapes": {"mat2": [2, 6, 5]}}
    assert ops["abs.out"].hints == ()
    # The default set does not read the file at all (not even when broken).
    (specs / "all" / "hints.yaml").write_text("hints: [oops\n")
    assert [op.name for op in load_opset(specs).ops] == ["abs", "bmm"]


def test_unknown_overload_and_spec_op_are_located(tmp_path, monkeypatch):
    specs = _specs(
        tmp_path,
        monkeypatch,
        "hints:\n  scatter.reduse_out: {reduce: [add]}\n  abs.out: {shapes: {}}\n",
    )
    assert _errors(specs) == [
        f"specs/all/hints.yaml:2:3: torch {version()} has no ATen out= overload "
        "'scatter.reduse_out'; did you mean 'scatter.reduce_out', "
        "'scatter.value_reduce_out', 'scatter_reduce.two_out'? (hints for an "
        "overload some releases lack: limit them to the others with 'torch: "
        '">=2.14"\' in their mapping)',
        "specs/all/hints.yaml:3:3: 'abs.out' is in the specs: give its hints in its "
        "spec entry",
    ]


def test_unknown_argument_and_shape_names_are_located(tmp_path, monkeypatch):
    specs = _specs(
        tmp_path,
        monkeypatch,
        "hints:\n"
        "  scatter.reduce_out: {reduction: [add]}\n"
        "  select_backward.out: {shapes: {dim: [6]}}\n",
    )
    errors = _errors(specs)
    assert len(errors) == 2, errors
    assert errors[0].startswith(
        "specs/all/hints.yaml:2:24: hint 'reduction' names no argument of "
        f"scatter.reduce_out in torch {version()} (arguments: "
    ), errors
    assert errors[1].startswith(
        "specs/all/hints.yaml:3:25: hint 'shapes' names 'dim', which is no tensor "
        f"argument of select_backward.out in torch {version()}"
    ), errors


def test_file_structure_errors(tmp_path, monkeypatch):
    specs = _specs(
        tmp_path, monkeypatch, "hint:\n  a: b\nhints:\n  scatter.reduce_out: [1]\n"
    )
    assert _errors(specs) == [
        "specs/all/hints.yaml:1:1: unknown key 'hint' in a hints file "
        "(did you mean 'hints'?)",
        "specs/all/hints.yaml:4:24: an item of the hints of 'scatter.reduce_out' "
        "must be a mapping, got int",
    ]
