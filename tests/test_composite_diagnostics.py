"""Diagnostics of composite ops (signature + C++ body in a spec file):

- the generated wrapper frames the body with `#line` directives, so the
  compiler names the spec file and line of an error in the body, and names
  the generated file again after it;
- a body that does not compile fails a (small, selective) build with an
  error at the spec's line;
- a signature without an out= argument says the out annotation is missing
  and shows the form, at the signature.
"""

import re
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.render import pipeline
from infiniops_codegen.base import project as projects
from infiniops_codegen.base.errors import SpecErrors

ROOT = Path(__file__).resolve().parent.parent

# The body starts on line 8 (the line after `fallback: |`); the unknown name
# is on line 9.
BROKEN = """\
# A composite whose body does not compile.
ops:
  - signature: "broken_body(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [neg]
    reference: "torch.neg(input)"

    fallback: |
      // the next line names no declared variable
      at::neg_out(out, no_such_variable);
"""
BROKEN_BODY_LINE = 8
BROKEN_ERROR_LINE = 9

QUOTED = """\
ops:
  - signature: "quoted_neg(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [neg]
    fallback: "at::neg_out(out, input);"
"""

LINE = re.compile(r'^#line (\d+) "([^"]+)"$')


def _specs(tmp_path: Path, files: dict[str, str]) -> Path:
    """A spec directory named op_specs, as the project's own."""
    specs = tmp_path / "op_specs"
    specs.mkdir()
    for name, text in files.items():
        (specs / name).write_text(text, encoding="utf-8")
    return specs


def _directives(text: str) -> list[tuple[int, int, str]]:
    """(index of the directive's line, line it names, file it names)."""
    found = []
    for i, line in enumerate(text.splitlines()):
        m = LINE.match(line)
        if m:
            found.append((i, int(m.group(1)), m.group(2)))
    return found


def _shard_of(files: dict[str, str], op: str) -> tuple[str, str]:
    for rel, text in files.items():
        if rel.startswith("torch_fallback/shard_") and f"\nvoid {op}(" in text:
            return rel, text
    raise AssertionError(f"no shard holds {op}")


@pytest.mark.parametrize(
    "files, op, line",
    [
        ({"composite.yaml": BROKEN}, "broken_body", BROKEN_BODY_LINE),
        ({"composite.yaml": QUOTED}, "quoted_neg", 4),  # on the key's own line
    ],
)
def test_body_is_framed_by_line_directives(tmp_path, files, op, line):
    specs = _specs(tmp_path, files)
    rel, text = _shard_of(pipeline.generate(specs).files, op)
    lines = text.splitlines()
    spec_lines = files["composite.yaml"].splitlines()
    (into, named, source), (back, resumed, generated) = _directives(text)
    # Relative to the spec directory's parent, never an absolute path.
    assert source == "op_specs/composite.yaml"
    assert named == line
    # The body's first line is the spec's line `named` (whatever indentation).
    first = lines[into + 1].strip()
    assert first and first in spec_lines[named - 1], (first, spec_lines[named - 1])
    # Afterwards the generated file again, with its real line numbers.
    assert generated == rel
    assert resumed == back + 2  # the line after the directive, 1-based
    assert lines[back + 1] == "}"  # the end of the body's function


def test_committed_shards_point_at_the_project_specs():
    """Every body in generated/ names the line of op_specs/ it came from."""
    seen = 0
    for shard in sorted((ROOT / "generated" / "torch_fallback").glob("shard_*.cpp")):
        lines = shard.read_text(encoding="utf-8").splitlines()
        for i, named, source in _directives("\n".join(lines)):
            if not source.startswith("op_specs/"):
                assert source == f"torch_fallback/{shard.name}"
                assert named == i + 2
                continue
            spec = (ROOT / source).read_text(encoding="utf-8").splitlines()
            first = lines[i + 1].strip()
            assert first and first in spec[named - 1], (shard.name, first)
            seen += 1
    assert seen >= 1, "no composite body in generated/ carries a #line"


@pytest.mark.own_build("a build of its own: a composite whose body does not compile")
def test_body_compile_error_names_the_spec_line(tmp_path):
    """A selective build of the broken composite alone, in tmp_path."""
    specs = _specs(tmp_path, {"composite.yaml": BROKEN})
    request = builder.BuildRequest(
        build_dir=tmp_path / "b",
        spec_dir=specs,
        ops="broken_body",
        smoke=False,
        jobs=2,
        project=projects.load(ROOT),
    )
    with pytest.raises(builder.BuildError) as caught:
        builder.build(request, echo=lambda line: None)
    message = str(caught.value)
    assert f"op_specs/composite.yaml:{BROKEN_ERROR_LINE}:" in message, message
    assert "no_such_variable" in message, message


@pytest.mark.parametrize(
    "signature, lacking",
    [
        ("foo(Tensor input) -> Tensor", "missing the out annotation"),
        (
            "foo(Tensor input, *, Tensor out) -> Tensor",
            "'out' lacks the out annotation",
        ),
        (
            "foo(Tensor input, *, Tensor(a) result) -> Tensor(a)",
            "'result' lacks the out annotation",
        ),
    ],
)
def test_signature_without_out_annotation(tmp_path, monkeypatch, signature, lacking):
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text(
        f'ops:\n  - signature: "{signature}"\n    fallback: "x;"\n', encoding="utf-8"
    )
    with pytest.raises(SpecErrors) as caught:
        pipeline.load_opset(specs)
    (error,) = caught.value.errors
    # At the signature (its value), not at the entry.
    assert (error.path, error.line, error.col) == ("specs/bad.yaml", 2, 16)
    assert error.message.startswith(
        f"composite signature has no out= argument: {lacking}; "
    ), error.message
    name = "result" if "result" in signature else "out"
    assert f"'foo(Tensor input, *, Tensor(a!) {name}) -> Tensor(a!)'" in error.message
    assert "keyword-only Tensor with a write annotation" in error.message


@pytest.mark.parametrize(
    "reference, message",
    [
        (
            "torch.hypot(inpt, other)",
            "'reference' reads 'inpt', which is none of the op's input arguments "
            "(input, other) nor torch; did you mean 'input'?",
        ),
        ("torch.hypot(input,", "'reference' is no Python expression: "),
    ],
)
def test_reference_that_cannot_run_is_a_located_spec_error(
    tmp_path, monkeypatch, reference, message
):
    """Found by `generate`, at the reference, not by the harness as an op
    without samples."""
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "c.yaml").write_text(
        "ops:\n"
        '  - signature: "hyp(Tensor input, Tensor other, *, Tensor(a!) out) -> '
        'Tensor(a!)"\n'
        "    uses: [hypot]\n"
        f"    reference: {reference!r}\n"
        '    fallback: "at::hypot_out(out, input, other);"\n',
        encoding="utf-8",
    )
    with pytest.raises(SpecErrors) as caught:
        pipeline.load_opset(specs)
    (error,) = caught.value.errors
    assert (error.path, error.line, error.col) == ("specs/c.yaml", 4, 16)
    assert error.message.startswith(message), error.message


def test_reference_names_comprehensions_and_builtins_are_fine(tmp_path):
    specs = _specs(
        tmp_path,
        {
            "c.yaml": "ops:\n"
            '  - signature: "hyp(Tensor input, Tensor other, *, Tensor(a!) out) -> '
            'Tensor(a!)"\n'
            "    uses: [hypot]\n"
            '    reference: "sum([torch.hypot(x, other) for x in (input,)])"\n'
            '    fallback: "at::hypot_out(out, input, other);"\n'
        },
    )
    (op,) = [op for op in pipeline.load_opset(specs).ops if op.name == "hyp"]
    assert op.reference_line == 4
