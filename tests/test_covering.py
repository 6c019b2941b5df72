"""The covering selection (`--ops covering`, render/covering.py) covers the
default set: the features the model gives both sets are the same, and so are
the lines of the templates and of the generator's model and render code that
rendering them runs. CI builds its secondary builds (sanitizers, other torch
releases) from it on that ground (docs/building.md#ci)."""

from __future__ import annotations

import json
import linecache
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from infiniops_codegen.base.locations import MANIFEST, PACKAGE_DIR
from infiniops_codegen.model.resolve import SelectionError
from infiniops_codegen.render import covering, pipeline
from infiniops_codegen.render.sources import manifest_data, render
from infiniops_codegen.schema.db import load_schema_db

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "op_specs"


@pytest.fixture(scope="module")
def db():
    return load_schema_db()


@pytest.fixture(scope="module")
def whole(db):
    return pipeline.load_opset(SPECS, db=db)


@pytest.fixture(scope="module")
def chosen(db):
    return pipeline.load_opset(SPECS, "covering", db=db)


def _features(opset) -> set[str]:
    return set(covering.features(opset))


def test_the_covering_set_has_every_feature_of_the_default_set(whole, chosen):
    lost = sorted(_features(whole) - _features(chosen))
    assert lost == []
    assert chosen.selection == "covering"
    # what makes it worth having: a fraction of the ops
    assert len(chosen.ops) * 3 < len(whole.ops), len(chosen.ops)


def test_every_native_kernel_and_composite_body_is_in_it(whole, chosen):
    names = {op.name for op in chosen.ops}
    own_code = {op.name for op in whole.ops if op.native or op.composite}
    assert own_code and own_code <= names


def test_the_features_see_each_kind_of_path(whole):
    found = _features(whole)
    for expected in (
        "arg[input:tensor]",
        "arg[output:tensor]",
        "arg[input:tensor_list]",
        "arg[attribute:int_list].size:many",
        "op.composite:true",
        "op.lane:true",
        "op.no_out:false",
        "op.direct_cpu:true",
        "native kernel:cpu:add",
        "dispatcher.typed_functional:true",
        "function.direct:false",
        "overload:served by no op",
    ):
        assert expected in found, expected


def _lines(opset) -> set[tuple[str, int]]:
    """(file, line) of every template line (their compiled code) and every
    line of model/, render/ and schema/ that rendering opset runs, but this
    check's own module."""
    roots = tuple(str(PACKAGE_DIR / d) for d in ("render", "model", "schema"))
    own = covering.__file__
    lines: set[tuple[str, int]] = set()

    def tracer(frame, event, arg):
        name = frame.f_code.co_filename
        if not name.startswith(roots) or name == own:
            return None
        if event == "line":
            lines.add((name, frame.f_lineno))
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        render(opset)
    finally:
        sys.settrace(previous)
    return lines


def test_rendering_it_runs_every_line_the_default_set_runs(whole, chosen):
    default, covered = _lines(whole), _lines(chosen)
    assert any(name.endswith(".j2") for name, _ in default)  # templates traced
    missed = [
        f"{Path(name).relative_to(PACKAGE_DIR)}:{line}: "
        f"{linecache.getline(name, line).strip()}"
        for name, line in sorted(default - covered)
    ]
    assert missed == []


def test_an_op_left_out_loses_its_features(whole, db):
    """The comparison can fail: the selection without one of its ops whose
    features no other op has lacks them."""
    names = covering.select(
        whole, lambda some: pipeline.load_opset(SPECS, ",".join(some), db=db)
    )
    fewer = [n for n in names if n != "rms_norm"]
    partial = pipeline.load_opset(SPECS, ",".join(fewer), db=db)
    lost = _features(whole) - _features(partial)
    assert "composite body:rms_norm" in lost and "native kernel:cpu:rms_norm" in lost


def test_named_ops_join_it_and_unknown_ones_are_refused(db, whole):
    more = pipeline.load_opset(SPECS, "covering,abs,exp", db=db)
    assert {"abs", "exp"} <= {op.name for op in more.ops}
    assert _features(more) >= _features(whole)
    assert more.selection == "covering,abs,exp"
    with pytest.raises(SelectionError, match="no_such_op"):
        pipeline.load_opset(SPECS, "covering,no_such_op", db=db)


def test_ops_a_release_changes_join_it(tmp_path, whole, chosen, db):
    """Where the committed generated/ was made from other schemas, the ops
    they change are built too: a release job compiles its drift."""
    data = json.loads(json.dumps(manifest_data(whole)))
    outside = next(op for op in data["ops"] if op["name"] == "abs")
    assert "abs" not in {op.name for op in chosen.ops}
    outside["schema"] = outside["schema"].replace("Tensor self", "Tensor input")
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    drifted = pipeline.load_opset(SPECS, "covering", db=db, reference=tmp_path)
    assert "abs" in {op.name for op in drifted.ops}
    assert _features(drifted) >= _features(whole)
    # the committed one: nothing drifts on the torch it was made with
    same = pipeline.load_opset(SPECS, "covering", db=db, reference=REPO / "generated")
    assert [op.name for op in same.ops] == [op.name for op in chosen.ops]


def test_a_change_of_tags_alone_is_no_drift_to_build(tmp_path, whole):
    """torch 2.11 has no `out` tag on any out= overload: the registration
    lists tags as data, so such a change adds no op (it would add all)."""
    data = json.loads(json.dumps(manifest_data(whole)))
    for op in data["ops"]:
        op["tags"] = [t for t in op["tags"] if t != "out"]
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    assert pipeline.drifted_ops(whole, tmp_path) == set()
    abs_op = next(op for op in data["ops"] if op["name"] == "abs")
    abs_op["schema"] = abs_op["schema"].replace("Tensor self", "Tensor input")
    (tmp_path / MANIFEST).write_text(json.dumps(data))
    assert pipeline.drifted_ops(whole, tmp_path) == {"abs"}


def test_the_selection_is_stable(db, chosen):
    again = pipeline.load_opset(SPECS, "covering", db=db)
    assert [op.name for op in again.ops] == [op.name for op in chosen.ops]
