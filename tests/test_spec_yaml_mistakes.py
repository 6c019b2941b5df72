"""YAML mistakes reported where they are, as what they are (issue 15).

An over-indented list item is folded by YAML into the plain scalar above it
('logaddexp2.out - heaviside.out'), and an unclosed `{` or `[` makes PyYAML
fail on a later line. Both must be reported at the line to fix, in words
that say what went wrong, not as an unknown overload or a parser message on
the wrong line.

The tests run in a temporary working directory holding specs/, so the paths
in errors are relative ("specs/x.yaml").
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infiniops_codegen.errors import SpecErrors
from infiniops_codegen.pipeline import load_opset
from torch_facts import version

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def load(tmp_path, monkeypatch):
    """Write {file name: YAML text} into ./specs and load it."""
    monkeypatch.chdir(tmp_path)

    def run(files: dict[str, str]):
        specs = tmp_path / "specs"
        specs.mkdir()
        for name, text in files.items():
            (specs / name).write_text(text, encoding="utf-8")
        return load_opset(Path("specs"))

    return run


def only_error(load, text: str):
    with pytest.raises(SpecErrors) as info:
        load({"x.yaml": text})
    errors = info.value.errors
    assert len(errors) == 1, [str(e) for e in errors]
    error = errors[0]
    assert error.path == "specs/x.yaml"
    return error


# -- an over-indented list item ---------------------------------------------


def test_over_indented_item_is_reported_at_its_dash(load):
    text = "ops:\n  - abs.out\n  - logaddexp2.out\n    - heaviside.out\n  - neg.out\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (4, 5)
    assert error.message == (
        "this list item is indented more than the item above it, so YAML read "
        "both as one name 'logaddexp2.out - heaviside.out'; indent it like "
        "the item above"
    )
    assert "has no ATen overload" not in error.message


def test_over_indented_item_in_a_copy_of_a_real_spec(load):
    """The issue's shape in op_specs/extended.yaml: one bulk entry indented
    two more spaces than the one above it."""
    lines = (REPO / "op_specs" / "extended.yaml").read_text().splitlines()
    bulk = re.compile(r"^  - [\w.]+$")
    i = next(
        i
        for i in range(len(lines) - 1)
        if bulk.match(lines[i]) and bulk.match(lines[i + 1])
    )
    above, item = lines[i][4:], lines[i + 1][4:]
    lines[i + 1] = "  " + lines[i + 1]
    error = only_error(load, "\n".join(lines) + "\n")
    assert (error.line, error.col) == (i + 2, 5)
    assert error.message.startswith(
        "this list item is indented more than the item above it, so YAML read "
        f"both as one name '{above} - {item}'"
    ), error.message


def test_several_over_indented_items_are_counted(load):
    text = "ops:\n  - logaddexp2.out\n    - heaviside.out\n    - neg.out\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (3, 5)
    assert (
        "YAML read these 3 lines as one name "
        "'logaddexp2.out - heaviside.out - neg.out'" in error.message
    ), error.message


def test_name_continued_without_a_dash(load):
    error = only_error(load, "ops:\n  - abs.out\n    neg.out\n")
    assert (error.line, error.col) == (3, 5)
    assert error.message == (
        "this line continues the name on line 2, so YAML read them as one "
        "name 'abs.out neg.out'; a name must fit on one line (fix the "
        "indentation, or start a new item with '- ')"
    )


@pytest.mark.parametrize(
    "text, position, joined",
    [
        # the value of 'aten'
        ("ops:\n  - aten: abs.out\n      - neg.out\n", (3, 7), "abs.out - neg.out"),
        # a platform in 'native'
        (
            "ops:\n  - aten: abs.out\n    native:\n      - cpu\n        - nvidia\n",
            (5, 9),
            "cpu - nvidia",
        ),
    ],
)
def test_over_indented_item_wherever_a_name_is_expected(load, text, position, joined):
    error = only_error(load, text)
    assert (error.line, error.col) == position
    assert f"as one name '{joined}'" in error.message, error.message


def test_unknown_overload_is_still_reported_as_such(load):
    error = only_error(load, "ops:\n  - neg.out\n  - abz.out\n")
    assert (error.line, error.col) == (3, 5)
    assert error.message.startswith(
        f"torch {version()} has no ATen overload 'abz.out'"
    ), error.message


# -- an unclosed flow collection --------------------------------------------


@pytest.mark.parametrize(
    "text, position, message",
    [
        # the shape: the next entries are read into the mapping
        (
            "ops:\n  - {aten: add.out, native: [cpu]\n  - neg.out\n  - abs.out\n",
            (2, 5),
            "'{' opened here is never closed (missing '}')",
        ),
        # a later entry that is closed does not close the first one
        (
            "ops:\n  - {aten: add.out, native: [cpu]\n"
            "  - {aten: mul.out, native: [cpu]}\n",
            (2, 5),
            "'{' opened here is never closed (missing '}')",
        ),
        # a flow list left open at the end of the file
        (
            "ops: [abs.out, neg.out\n",
            (1, 6),
            "'[' opened here is never closed (missing ']')",
        ),
        # closed by the wrong kind of bracket
        (
            "ops:\n  - {aten: add.out, native: [cpu}\n  - neg.out\n",
            (2, 29),
            "'[' opened here is never closed (missing ']')",
        ),
        # a closing bracket inside quotes or a comment does not count
        (
            "ops:\n  - {aten: add.out, name: '}'\n  - neg.out\n",
            (2, 5),
            "'{' opened here is never closed (missing '}')",
        ),
        (
            "ops:\n  - {aten: add.out  # }\n  - neg.out\n",
            (2, 5),
            "'{' opened here is never closed (missing '}')",
        ),
    ],
)
def test_unclosed_bracket_is_reported_where_it_opens(load, text, position, message):
    error = only_error(load, text)
    assert (error.line, error.col) == position
    assert error.message == f"malformed YAML: {message}"


@pytest.mark.parametrize(
    "text, position, problem",
    [
        # inside a collection that is closed: PyYAML's message and position
        (
            "ops:\n  - {aten: add.out, native: [cpu] x: y: z}\n",
            (2, 35),
            "expected ',' or '}', but got '<scalar>'",
        ),
        ("ops:\n\t- abs.out\n", (2, 1), "found character '\\t'"),
    ],
)
def test_other_syntax_errors_keep_pyyaml_message(load, text, position, problem):
    error = only_error(load, text)
    assert (error.line, error.col) == position
    assert error.message.startswith(f"malformed YAML: {problem}"), error.message
    assert "never closed" not in error.message


# -- correct files still load -----------------------------------------------


def test_correct_multi_op_file_loads(load):
    text = (
        "ops:\n"
        "  - abs.out\n"
        "  - logaddexp2.out\n"
        "  - heaviside.out\n"
        "  - {aten: add.out, native: [cpu]}\n"
        "  - aten: neg.out\n"
        "    native:\n"
        "      - cpu\n"
        "  # a comment with { and [\n"
        "  - {aten: mul.out, name: times, native: {cpu: [float32]}}\n"
    )
    opset = load({"x.yaml": text})
    names = {op.name for op in opset.ops}
    assert {"abs", "logaddexp2", "heaviside", "add", "neg", "times"} <= names


def test_multi_line_plain_body_is_not_a_name(load):
    """Only names must fit on one line: a composite's signature, body and
    reference may be plain scalars over several lines."""
    text = (
        "ops:\n"
        "  - signature: twice(Tensor input, *,\n"
        "      Tensor(a!) out) -> Tensor(a!)\n"
        "    uses: [mul]\n"
        "    reference: input\n"
        "      * 2\n"
        "    fallback: at::mul_out(out,\n"
        "      input, 2);\n"
    )
    opset = load({"x.yaml": text})
    assert "twice" in {op.name for op in opset.ops}
