"""A composite's `uses:` is checked against the ATen operators its body calls
(issue 41, point 3; opspec/composite_calls.py): an operator called but not listed
is a spec error naming the entry to add (before, the compiler's
"'silu' is not a member of 'at'", or nothing while another op of the shard
included the header), and an entry not called one naming the entry to
remove. Exact messages at path:line:col, exit 2."""

from __future__ import annotations

import pytest

from infiniops_codegen.opspec.composite_calls import calls

SIGNATURE = '  - signature: "f(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"\n'


@pytest.fixture
def generate(tmp_path, monkeypatch, runner, helpers):
    """Write specs/ops.yaml and run generate on it: (exit code, output)."""
    monkeypatch.chdir(tmp_path)

    def run(text: str):
        specs = tmp_path / "specs"
        specs.mkdir(exist_ok=True)
        (specs / "ops.yaml").write_text(text, encoding="utf-8")
        result = helpers.invoke(runner, "generate", "--specs", "specs", "--out", "out")
        assert "Traceback" not in result.output
        return result.exit_code, result.output.splitlines()

    return run


def test_an_operator_called_but_not_listed(generate):
    code, lines = generate(
        "ops:\n"
        + SIGNATURE
        + "    uses: [mul]\n"
        + "    fallback: |\n"
        + "      auto half = input.size(-1) / 2;\n"
        + "      at::mul_out(out, at::silu(input), input);\n"
    )
    assert code == 2
    assert lines[0] == (
        "specs/ops.yaml:3:11: the body calls at::silu (line 6), but 'uses' does "
        "not list silu: add it (uses: [mul, silu])"
    )


def test_a_body_that_calls_operators_without_uses(generate):
    code, lines = generate(
        "ops:\n" + SIGNATURE + '    fallback: "at::neg_out(out, at::abs(input));"\n'
    )
    assert code == 2
    assert lines[0] == (
        "specs/ops.yaml:3:15: the body calls at::abs (line 3) and at::neg_out "
        "(line 3): list the operators whose headers it needs in 'uses' "
        "(uses: [abs, neg])"
    )


def test_an_entry_the_body_does_not_call(generate):
    code, lines = generate(
        "ops:\n"
        + SIGNATURE
        + "    uses: [neg, pow]\n"
        + '    fallback: "at::neg_out(out, input);"\n'
    )
    assert code == 2
    assert lines[0] == (
        "specs/ops.yaml:3:11: 'uses' lists pow, which the body does not call "
        "(as at::pow(...) or at::pow_out(...)): remove it (uses: [neg])"
    )


def test_what_is_no_call_of_an_operator(generate):
    """Comments, literals, methods, nested namespaces and functions that are
    no operator need no entry: `uses: [neg]` is the whole list."""
    code, lines = generate(
        "ops:\n"
        + SIGNATURE
        + "    uses: [neg]\n"
        + "    fallback: |\n"
        + "      // at::silu(input) would do too\n"
        + '      TORCH_CHECK(input.dim() > 0, "at::abs(x) is not called");\n'
        + "      const auto threads = at::get_num_threads();\n"
        + "      at::neg_out(out, input.pow(2));\n"
    )
    assert code == 0, lines


def test_the_calls_of_a_body():
    headers = {"add", "relu", "mul", "sum"}
    body = (
        "at::relu_(x);\n"
        "::at::add_outf(a, b, 1, out);\n"
        "foo::at::mul(a, b);  /* at::sum(a) */\n"
        "at::native::add(a);\n"
        "at::sum_symint(a);\n"
    )
    assert [(c.operator, c.spelled, c.line) for c in calls(body, headers)] == [
        ("relu", "at::relu_", 0),
        ("add", "at::add_outf", 1),
        ("sum", "at::sum_symint", 4),
    ]
