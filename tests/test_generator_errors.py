"""Spec errors: one test per kind, each asserting the exact `path:line:col`
and the message, exit code 2, nothing written and no traceback.

The tests run in a temporary working directory holding specs/, so the paths
in messages are relative ("specs/bad.yaml"), as they are for op_specs/.
"""

from __future__ import annotations

import re

import pytest
from torch_facts import version

ERROR_LINE = re.compile(r"^(specs/[\w.]+):(\d+):(\d+): (.*)$")


@pytest.fixture
def run_specs(tmp_path, monkeypatch, runner, helpers):
    """Write {file name: YAML text} into ./specs and run generate on it."""
    monkeypatch.chdir(tmp_path)

    def run(files: dict[str, str]):
        specs = tmp_path / "specs"
        specs.mkdir()
        for name, text in files.items():
            (specs / name).write_text(text, encoding="utf-8")
        result = helpers.invoke(runner, "generate", "--specs", "specs", "--out", "out")
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert not (tmp_path / "out").exists(), "nothing may be written"
        errors = [line for line in result.output.splitlines() if ERROR_LINE.match(line)]
        n = len(errors)
        noun = "problem" if n == 1 else "problems"
        assert f"{n} spec {noun}; nothing was written" in result.output
        return errors

    return run


def only_error(run_specs, text: str) -> str:
    errors = run_specs({"bad.yaml": text})
    assert len(errors) == 1, errors
    return errors[0]


def test_unknown_aten_overload_suggests_close_matches(run_specs):
    error = only_error(run_specs, "ops:\n  - neg.out\n  - abz.out\n")
    assert error.startswith(
        f"specs/bad.yaml:3:5: torch {version()} has no ATen overload 'abz.out'; "
        "did you mean 'abs.out'"
    ), error


@pytest.mark.parametrize(
    "aten, hint",
    [
        # the op's own out= overloads first, not other ops' of the same overload
        ("gelu.Tensor_out", "'gelu.out'"),
        ("softmax.out", "'softmax.int_out'"),
    ],
)
def test_a_wrong_overload_suggests_the_ops_own_overloads(run_specs, aten, hint):
    error = only_error(run_specs, f"ops:\n  - {aten}\n")
    assert error == (
        f"specs/bad.yaml:2:5: torch {version()} has no ATen overload '{aten}'; "
        f"did you mean {hint}?"
    )


def test_unknown_aten_overload_in_mapping_points_at_the_value(run_specs):
    error = only_error(run_specs, "ops:\n  - {aten: sofmax.int_out, name: sm}\n")
    assert error.startswith(
        f"specs/bad.yaml:2:12: torch {version()} has no ATen overload "
        "'sofmax.int_out'; did you mean 'softmax.int_out'"
    ), error


@pytest.mark.parametrize(
    "aten, suggestion",
    [("abs", "'abs.out'"), ("add.Tensor", "'add.out'")],
)
def test_aten_overload_without_out_form(run_specs, aten, suggestion):
    error = only_error(run_specs, f"ops:\n  - {aten}\n")
    assert error.startswith(
        f"specs/bad.yaml:2:5: '{aten}' is an ATen overload without out= arguments"
    ), error
    assert "did you mean" in error and suggestion in error


@pytest.mark.parametrize(
    "argument, reason",
    [
        ("Storage s", "argument 's' of foo: unsupported: type 'Storage'"),
        ("Device d", "argument 'd' of foo: unsupported: type 'Device' is not optional"),
    ],
)
def test_unsupported_argument_type_names_argument_and_type(run_specs, argument, reason):
    error = only_error(
        run_specs,
        "ops:\n"
        f'  - signature: "foo(Tensor input, {argument}, *, Tensor(a!) out)'
        ' -> Tensor(a!)"\n'
        "    fallback: out.copy_(input);\n",
    )
    assert error.startswith(f"specs/bad.yaml:2:16: {reason}"), error


def test_duplicate_op_names_point_at_both_entries(run_specs):
    errors = run_specs(
        {
            "bad.yaml": "ops:\n"
            "  - abs.out\n"
            "  - neg.out\n"
            "  - {aten: abs.out}\n"
            "  - {aten: exp.out, name: neg}\n",
            "more.yaml": "ops:\n  - exp.out\n  - abs.out\n",
        }
    )
    assert errors == [
        "specs/bad.yaml:4:5: duplicate op name 'abs' (also at specs/bad.yaml:2:5)",
        "specs/bad.yaml:5:27: duplicate op name 'neg' (also at specs/bad.yaml:3:5)",
        "specs/more.yaml:3:5: duplicate op name 'abs' (also at specs/bad.yaml:2:5)",
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "ops:\n  - {aten: neg.out, nativ: [cpu]}\n",
            "specs/bad.yaml:2:21: unknown key 'nativ' in an op entry "
            "(did you mean 'native'?)",
        ),
        (
            "ops:\n  - abs.out\nopz: []\n",
            "specs/bad.yaml:3:1: unknown key 'opz' in a spec file (did you mean 'ops'?)",
        ),
        (
            "settings:\n  shard_sise: 4\n",
            "specs/bad.yaml:2:3: unknown key 'shard_sise' in 'settings' "
            "(did you mean 'shard_size'?)",
        ),
    ],
)
def test_unknown_keys_with_suggestion(run_specs, text, expected):
    assert only_error(run_specs, text) == expected


@pytest.mark.parametrize(
    "entry, col, message",
    [
        ("name: 3", 27, "'name' must be a non-empty string, got int"),
        ("name: ''", 27, "'name' must be a non-empty string, got empty"),
        ("name: 2x", 27, "'name' '2x' is not a valid Python identifier"),
        ("native: 5", 29, "'native' must be a list, got int"),
        ("rename: [a]", 29, "'rename' must be a mapping, got a list"),
        (
            "rename: {self: 1}",
            36,
            "the new name of 'self' must be a non-empty string, got int",
        ),
        ("hints: 5", 28, "'hints' must be a mapping, got int"),
        ("hints: [1]", 29, "an item of 'hints' must be a mapping, got int"),
        (
            "hints: [{k: [1]}]",
            29,
            "each item of a list of 'hints' needs 'torch', the range of torch "
            'releases it is for (e.g. torch: ">=2.14")',
        ),
        (
            "hints: {torch: 2.14, k: [1]}",
            36,
            "a range of torch releases must be a string such as '>=2.14' or "
            "'>=2.11,<2.14', got 2.14",
        ),
        (
            "hints: {torch: '=>2.14', k: [1]}",
            36,
            "'=>2.14' is not a range of torch releases: use clauses such as "
            "'>=2.14', '<2.15', '==2.14.*', '!=2.14.0', joined by commas",
        ),
    ],
)
def test_wrong_value_types(run_specs, entry, col, message):
    text = f"ops:\n  - {{aten: abs.out, {entry}}}\n"
    assert only_error(run_specs, text) == f"specs/bad.yaml:2:{col}: {message}"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("ops: {abs: 1}\n", "specs/bad.yaml:1:6: 'ops' must be a list, got a mapping"),
        (
            "- abs.out\n",
            "specs/bad.yaml:1:1: a spec file must be a mapping, got a list",
        ),
        (
            "ops:\n  - 7\n",
            "specs/bad.yaml:2:5: an op entry must be a non-empty string, got int",
        ),
        (
            "settings: {shard_size: big}\n",
            "specs/bad.yaml:1:24: 'shard_size' must be an integer of at least 1, got 'big'",
        ),
        (
            "settings: {shard_size: 0}\n",
            "specs/bad.yaml:1:24: 'shard_size' must be an integer of at least 1, got 0",
        ),
    ],
)
def test_wrong_structure(run_specs, text, expected):
    assert only_error(run_specs, text) == expected


@pytest.mark.parametrize(
    "text, position, problem",
    [
        # bad indentation
        (
            "ops:\n  - aten: abs.out\n    name: a\n   native: [cpu]\n",
            "4:4",
            "this key is indented 3 spaces, which lines up with no mapping above "
            "it; indent it 4 spaces, like the key 'name' on line 3",
        ),
        # unclosed bracket
        (
            "ops: [abs.out, neg.out\n",
            "1:6",
            "'[' opened here is never closed (missing ']')",
        ),
        (
            "ops:\n  - {aten: abs.out\n  - neg.out\n",
            "2:5",
            "'{' opened here is never closed (missing '}')",
        ),
        # a tab where YAML wants spaces
        ("ops:\n\t- abs.out\n", "2:1", "found character '\\t'"),
    ],
)
def test_malformed_yaml(run_specs, text, position, problem):
    error = only_error(run_specs, text)
    assert error.startswith(f"specs/bad.yaml:{position}: malformed YAML: "), error
    assert problem in error


def test_unknown_platform_in_native(run_specs):
    error = only_error(run_specs, "ops:\n  - {aten: abs.out, native: [cpu, cpux]}\n")
    assert error == (
        "specs/bad.yaml:2:35: unknown platform 'cpux' (did you mean 'cpu'?); "
        "known platforms: cpu, nvidia, iluvatar, metax, cambricon, moore, ascend, sim"
    )


def test_unknown_dtype(run_specs):
    error = only_error(
        run_specs, "ops:\n  - {aten: abs.out, native: {cpu: [float32, float33]}}\n"
    )
    assert error.startswith(
        "specs/bad.yaml:2:45: unknown dtype 'float33' (did you mean 'float32'"
    ), error


@pytest.mark.parametrize(
    "limit, col, shown",
    [("0", 45, "0"), ("-5", 45, "-5"), ("big", 45, "'big'"), ("1.5", 45, "1.5")],
)
def test_bad_native_size_limit(run_specs, limit, col, shown):
    error = only_error(
        run_specs,
        f"ops:\n  - {{aten: abs.out, native: {{cpu: {{float32: {limit}}}}}}}\n",
    )
    assert error == (
        f"specs/bad.yaml:2:{col}: the size limit of 'float32' on 'cpu' must be a "
        f"positive number of elements or null, got {shown}"
    )


def test_an_unknown_dtype_lists_the_valid_names(run_specs):
    error = only_error(run_specs, "ops:\n  - {aten: abs.out, native: {cpu: [fp32]}}\n")
    assert error == (
        "specs/bad.yaml:2:36: unknown dtype 'fp32'; the dtypes: bfloat16, bool, "
        "complex128, complex64, float16, float32, float64, int16, int32, int64, "
        "int8, uint8"
    )


def test_unknown_dtype_in_size_limits(run_specs):
    error = only_error(
        run_specs, "ops:\n  - {aten: abs.out, native: {cpu: {float33: 8}}}\n"
    )
    assert error.startswith("specs/bad.yaml:2:36: unknown dtype 'float33'"), error


@pytest.mark.parametrize(
    "signature, col, message",
    [
        ("baz(Tensor input,, *, Tensor(a!) out", 16, "invalid signature: "),
        (
            "foo(Tensor input) -> Tensor",
            16,
            "composite signature has no out= argument: missing the out annotation",
        ),
        (
            "foo.bar(Tensor input, *, Tensor(a!) out) -> Tensor(a!)",
            16,
            "a composite signature takes no overload name",
        ),
    ],
)
def test_invalid_composite_signature(run_specs, signature, col, message):
    error = only_error(
        run_specs, f'ops:\n  - signature: "{signature}"\n    fallback: "x;"\n'
    )
    assert error.startswith(f"specs/bad.yaml:2:{col}: {message}"), error


def test_composite_without_fallback_and_with_unknown_uses(run_specs):
    errors = run_specs(
        {
            "bad.yaml": "ops:\n"
            '  - signature: "f(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"\n'
            '  - signature: "g(Tensor input, *, Tensor(a!) out) -> Tensor(a!)"\n'
            "    fallback: x;\n"
            "    uses: [silu, nosuch]\n"
        }
    )
    assert errors == [
        "specs/bad.yaml:2:5: a composite op needs 'fallback' (the C++ body)",
        "specs/bad.yaml:5:11: 'uses' names 'nosuch', which is no ATen operator of "
        f"torch {version()}",
    ]


def test_every_problem_of_a_run_is_reported_sorted_by_line(run_specs):
    errors = run_specs(
        {
            "bad.yaml": "ops:\n"
            "  - {aten: exp.out, native: [cpux]}\n"  # 2 platform
            "  - abz.out\n"  # 3 unknown overload
            "  - {aten: log.out, nativ: [cpu]}\n"  # 4 unknown key
            "  - abs\n"  # 5 no out= form
            "  - {aten: sin.out, name: 3}\n"  # 6 wrong type
            '  - signature: "f(Tensor input, Storage s, *, Tensor(a!) out)'
            ' -> Tensor(a!)"\n'  # 7 unsupported type
            "    fallback: x;\n"
            "  - {aten: neg.out, name: log}\n"  # 9 duplicate
            "settings: {shard_size: -1, extra: 1}\n",  # 10 value, 10 key
            "broken.yaml": "ops: [abs.out\n",
        }
    )
    located = [ERROR_LINE.match(e).groups() for e in errors]
    assert [(p, int(line)) for p, line, _, _ in located] == [
        ("specs/bad.yaml", 2),
        ("specs/bad.yaml", 3),
        ("specs/bad.yaml", 4),
        ("specs/bad.yaml", 5),
        ("specs/bad.yaml", 6),
        ("specs/bad.yaml", 7),
        ("specs/bad.yaml", 9),
        ("specs/bad.yaml", 10),
        ("specs/bad.yaml", 10),
        ("specs/broken.yaml", 1),
    ]
    messages = [m for _, _, _, m in located]
    for fragment in (
        "unknown platform 'cpux'",
        "has no ATen overload 'abz.out'",
        "unknown key 'nativ'",
        "'abs' is an ATen overload without out= arguments",
        "'name' must be a non-empty string, got int",
        "type 'Storage'",
        "duplicate op name 'log' (also at specs/bad.yaml:4:5)",
        "unknown key 'extra'",
        "'shard_size' must be an integer of at least 1",
        "malformed YAML",
    ):
        assert any(fragment in m for m in messages), (fragment, messages)


def test_missing_spec_directory(tmp_path, monkeypatch, runner, helpers):
    monkeypatch.chdir(tmp_path)
    result = helpers.invoke(runner, "generate", "--specs", "nope", "--out", "out")
    assert result.exit_code == 2
    assert "nope:1:1: spec directory not found" in result.output
    assert "Traceback" not in result.output


def test_direct_cpu_setting_must_be_a_bool(run_specs):
    assert only_error(run_specs, "settings: {direct_cpu: 3}\n") == (
        "specs/bad.yaml:1:24: 'direct_cpu' must be true or false, got 3"
    )


@pytest.mark.parametrize(
    "entry, col, got",
    [
        ("{aten: null}", 10, "'aten' must be a non-empty string, got empty"),
        ("{aten: 3}", 10, "'aten' must be a non-empty string, got int"),
        (
            "{signature: [a], fallback: x}",
            15,
            "'signature' must be a non-empty string, got a list",
        ),
        (
            "{signature: 'f(Tensor input, *, Tensor(a!) out) -> Tensor(a!)', fallback: ''}",
            77,
            "'fallback' must be a non-empty string, got empty",
        ),
    ],
)
def test_bad_aten_or_signature_value_is_located_not_a_crash(run_specs, entry, col, got):
    """Found by tests/test_fuzz_specs.py: such an entry used to reach the
    resolver with neither field and raise a TypeError from torchgen."""
    assert (
        only_error(run_specs, f"ops:\n- {entry}\n") == f"specs/bad.yaml:2:{col}: {got}"
    )


def test_like_names_an_output_and_a_tensor_input(run_specs):
    """A composite's 'like' (how a call without out= allocates an output)
    is checked against its signature, and is for composites only."""
    errors = run_specs(
        {
            "bad.yaml": "ops:\n"
            '  - signature: "f(Tensor input, float eps, *, Tensor(a!) out) -> Tensor(a!)"\n'
            "    fallback: x;\n"
            "    like: {result: input}\n"
            '  - signature: "g(Tensor input, float eps, *, Tensor(a!) out) -> Tensor(a!)"\n'
            "    fallback: x;\n"
            "    like: {out: eps}\n"
            "  - {aten: exp.out, like: {out: self}}\n"
        }
    )
    assert errors == [
        "specs/bad.yaml:4:11: 'like' names 'result', which is not an output of the "
        "signature (outputs: out)",
        "specs/bad.yaml:7:11: 'like' allocates 'out' like 'eps', which is not a tensor "
        "input of the signature (tensor inputs: input)",
        "specs/bad.yaml:8:27: 'like' is only for composite ops (with 'signature')",
    ]
