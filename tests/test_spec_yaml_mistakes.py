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

from infiniops_codegen.base.errors import SpecErrors
from infiniops_codegen.render.pipeline import load_opset
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


# -- a line that lines up with nothing above it ------------------------------
# PyYAML says "expected <block end>, but found '<block sequence start>'" at
# the line, and "could not find expected ':'" on the line after it (past the
# end of the file for the last line). Both name the line and the fix.

BULK = (
    "ops:\n"
    "  - abs.out\n"
    "  - neg.out\n"
    "  - aten: add.out\n"
    "    native:\n"
    "      cpu: [float32]\n"
    "    hints:\n"
    "      shapes: {}\n"
    "  - mul.out\n"
)


def _replace_line(text: str, number: int, line: str) -> str:
    lines = text.splitlines()
    lines[number - 1] = line
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "line, col, fix",
    [
        # the shape: a list item at a column no list has
        (
            "     - mul.out",
            6,
            "indent it 2 spaces, like the item '- aten: add.out' on line 4",
        ),
        (
            " - mul.out",
            2,
            "indent it 2 spaces, like the item '- aten: add.out' on line 4",
        ),
        (
            "   - mul.out",
            4,
            "indent it 2 spaces, like the item '- aten: add.out' on line 4",
        ),
    ],
)
def test_misaligned_list_item_names_the_indentation_that_fits(load, line, col, fix):
    error = only_error(load, _replace_line(BULK, 9, line))
    assert (error.line, error.col) == (9, col)
    spaces = col - 1
    assert error.message == (
        f"malformed YAML: this list item is indented {spaces} "
        f"space{'' if spaces == 1 else 's'}, which lines up with no list above it; "
        + fix
    ), error.message


def test_misaligned_item_between_two_lists_offers_both(load):
    text = "ops:\n  - aten: add.out\n    native:\n     - cpu\n   - nvidia\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (5, 4)
    assert error.message.endswith(
        "indent it 5 spaces, like the item '- cpu' on line 4, or 2 spaces, "
        "like the item '- aten: add.out' on line 2"
    ), error.message


def test_misaligned_key_names_the_key_to_line_up_with(load):
    text = "ops:\n  - aten: add.out\n    native: [cpu]\n   hints: {dim: [1]}\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (4, 4)
    assert error.message == (
        "malformed YAML: this key is indented 3 spaces, which lines up with no "
        "mapping above it; indent it 4 spaces, like the key 'native' on line 3, "
        "or not at all, like the key 'ops' on line 1"
    )


def test_over_indented_key_is_not_read_as_a_value(load):
    """`native:` indented more than `aten:` continues aten's value; PyYAML
    fails at its ':' with "mapping values are not allowed here"."""
    text = "ops:\n  - aten: add.out\n     native: [cpu]\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (3, 6)
    assert error.message == (
        "malformed YAML: this key is indented more than the key 'aten' above it "
        "(line 2), so YAML reads this line as the rest of that key's value; "
        "indent it 4 spaces, like the key 'aten' on line 2"
    )


def test_a_list_items_continued_value_keeps_pyyamls_message(load):
    """`neg: x` under `- abs.out` continues the item, not a key's value: no
    key to line up with is named."""
    error = only_error(load, "ops:\n  - abs.out\n    neg: x\n")
    assert (error.line, error.col) == (3, 8)
    assert error.message == "malformed YAML: mapping values are not allowed here"


@pytest.mark.parametrize("newline", ["\n", ""], ids=["newline", "no_newline"])
@pytest.mark.parametrize(
    "line, message",
    [
        (
            "  -mul.out",
            "'-mul.out' is no list item: YAML needs a space after '-'; "
            "write '- mul.out'",
        ),
        (
            "  mul.out",
            "this line lines up with the list items above (the item "
            "'- neg2.out' on line 9) but does not start with '- '; "
            "write '- mul.out'",
        ),
    ],
)
def test_a_last_line_that_is_no_entry_is_reported_on_itself(
    load, line, message, newline
):
    """PyYAML reports these at the next line: 11:1, past the end of a file
    of 10 lines (or at the end of line 10 without a final newline)."""
    text = _replace_line(BULK, 9, "  - neg2.out") + line + newline
    assert text.count("\n") == 10 - (newline == "")
    error = only_error(load, text)
    assert (error.line, error.col) == (10, 3)
    assert error.message == f"malformed YAML: {message}"


def test_a_key_without_colon_at_the_top(load):
    error = only_error(load, "ops:\n  - abs.out\nsettings\n")
    assert (error.line, error.col) == (3, 1)
    assert error.message == (
        "malformed YAML: this line lines up with the keys above (the key 'ops' "
        "on line 1) but has no ':'; write 'key: value', or indent it as an "
        "item of the list above ('- ...')"
    )


def test_an_indentless_list_is_lined_up_with(load):
    """`ops:` with its items at its own column (valid YAML, though PyYAML
    opens no block for such a list): a misaligned item is told that column."""
    text = "ops:\n- abs.out\n- aten: neg.out\n  native: [cpu]\n - mul.out\n"
    error = only_error(load, text)
    assert (error.line, error.col) == (5, 2)
    assert error.message.endswith(
        "; do not indent it, like the item '- aten: neg.out' on line 3"
    ), error.message


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
