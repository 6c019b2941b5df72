"""The command line as a user meets it: `list`, --help with examples on every
command, -v, exit codes, and errors that are one located line, in colour only
on a terminal."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from infiniops_codegen.model import coverage, manifest
from infiniops_codegen.cli import main
from torch_facts import version

REPO_MANIFEST = "generated/manifest.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _data(ops, platforms=("cpu", "nvidia", "ascend")) -> dict:
    return {
        "selection": "default",
        "shard_count": 1,
        "shard_size": 16,
        "platforms": list(platforms),
        "ops": ops,
    }


def _manifest(tmp_path, ops, platforms=("cpu", "nvidia", "ascend")):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(_data(ops, platforms)))
    return path


def _op(name, native=None, torch="all", signature=True):
    op = {
        "name": name,
        "aten": f"{name}.out",
        "composite": False,
        "source": "op_specs/x.yaml",
        "schema": f"{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        "arguments": [],
        "outputs": ["out"],
        "implementations": {"torch": torch, "native": native or {}},
    }
    if signature:
        op["python_signature"] = f"{name}(input: Tensor, *, out: Tensor) -> Tensor"
    return op


# --- list -------------------------------------------------------------------------


def test_matrix_native_torch_missing():
    data = _data(
        [
            _op("add", native={"cpu": ["float32"]}),
            _op("abs", torch=["cpu", "nvidia"]),
            _op("odd", native={"nvidia": []}, torch=[]),
        ]
    )
    m = coverage.matrix(manifest.from_data(data))
    assert dict(m.rows) == {
        "abs": {"cpu": "torch", "nvidia": "torch", "ascend": "missing"},
        "add": {"cpu": "native", "nvidia": "torch", "ascend": "torch"},
        "odd": {"cpu": "missing", "nvidia": "native", "ascend": "missing"},
    }
    assert m.counts()["ascend"] == {
        "native": 0,
        "torch": 1,
        "missing": 2,
        "no-source": 0,
    }


def test_list_table_of_the_committed_manifest(runner, helpers):
    """Works from generated/manifest.json without a build: one row per op,
    one column per platform a build has by default (cpu) or an op has a
    native kernel on (nvidia, sim); the others are named after the table, and
    --platform all shows every platform of data/platforms.yaml."""
    from infiniops_codegen.base.platforms import platform_names

    result = helpers.invoke(runner, "list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["op", "cpu", "nvidia", "sim"]
    others = ", ".join(n for n in platform_names() if n not in ("cpu", "nvidia", "sim"))
    assert lines[-1] == (
        f"not shown: {others} (no op has a native kernel there: the torch "
        "fallback where built; --platform all shows them)"
    )
    every = helpers.invoke(runner, "list", "--platform", "all").output.splitlines()
    assert every[0].split() == ["op", *platform_names()]
    assert not every[-1].startswith("not shown")
    committed = manifest.generated()
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1 : 1 + len(committed.ops)]}
    assert set(rows) == set(committed.names)
    assert rows["add"][0] == "native" and rows["abs"][0] == "torch"
    assert f"{len(committed.ops)} ops" in result.output
    assert not ANSI.search(result.output)


def test_list_json(runner, helpers):
    result = helpers.invoke(runner, "list", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["ops"]["add"]["cpu"] == "native"
    assert data["ops"]["mm"]["cpu"] == "torch"
    assert set(data["counts"]["cpu"]) == {"native", "torch", "missing", "no-source"}
    assert data["counts"]["cpu"]["no-source"] == 0  # this project has its kernels
    assert sum(data["counts"]["cpu"].values()) == len(data["ops"])


def test_list_op_shows_signature_and_implementations(runner, helpers):
    result = helpers.invoke(runner, "list", "--op", "topk")
    assert result.exit_code == 0, result.output
    python = next(ln for ln in result.output.splitlines() if "python:" in ln)
    # As the .pyi stub declares it (the manifest records the same rendering).
    assert python.split("python:")[1].strip() == (
        "topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, "
        "sorted: bool = True, *, values: Tensor | None = None, "
        "indices: Tensor | None = None, out: tuple[Tensor, Tensor] | None = None, "
        'implementation: Implementation = "default", '
        "stream: StreamLike | None = None) -> torch.return_types.topk"
    )
    assert "topk.values(Tensor self, SymInt k" in result.output
    add = helpers.invoke(runner, "list", "--op", "add").output
    assert re.search(
        r"^\s+cpu\s+native \(float32 up to 2048 elements, float16 up to 32 "
        r"elements, bfloat16 up to 512 elements\), torch$",
        add,
        re.M,
    )
    data = json.loads(helpers.invoke(runner, "list", "--op", "add", "--json").output)
    assert data["implementations"]["cpu"] == ["native", "torch"]
    assert data["python"].startswith(
        "add(input: Tensor | Number, other: Tensor | Number, *, alpha: Number = 1"
    )


def test_list_unknown_op_suggests_and_exits_2(runner, helpers):
    result = helpers.invoke(runner, "list", "--op", "topkk")
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: no op 'topkk' in the manifest; did you mean 'topk'?"
    )


def test_list_reads_a_build_dir_manifest(tmp_path, runner, helpers):
    _manifest(tmp_path, [_op("only", native={"cpu": []})])
    args = ("list", "--build-dir", tmp_path, "--json", "--platform", "all")
    result = helpers.invoke(runner, *args)
    assert json.loads(result.output)["ops"] == {
        "only": {"cpu": "native", "nvidia": "torch", "ascend": "torch"}
    }


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "no manifest; run 'infiniops-codegen generate'"),
        ("{not json", "manifest.json:1:2: not a valid manifest"),
        ("[]", "not an infiniops-codegen manifest"),
    ],
    ids=["missing", "not_json", "not_manifest"],
)
def test_list_bad_manifest_is_one_line_exit_2(
    tmp_path, runner, helpers, content, message
):
    if content is not None:
        (tmp_path / "manifest.json").write_text(content)
    result = helpers.invoke(runner, "list", "--build-dir", tmp_path)
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert message in result.output and "Traceback" not in result.output


# --- Help, verbose, colour -----------------------------------------------------------


@pytest.mark.parametrize("command", ["generate", "build", "bench", "list", "trace"])
def test_every_command_has_help_with_an_example(runner, helpers, command):
    result = helpers.invoke(runner, command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.output
    assert f"infiniops-codegen {command}" in result.output.split("Examples:")[1]


def test_group_help_states_exit_codes(runner, helpers):
    result = helpers.invoke(runner, "--help")
    assert "Exit codes: 0 success; 1" in result.output
    for command in ("generate", "build", "bench", "list"):
        assert command in result.output


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_before_or_after_the_command(
    basic_specs, tmp_path, runner, helpers, where
):
    args = ["generate", "--specs", basic_specs, "--out", tmp_path / "o"]
    args = ["-v", *args] if where == "before" else [*args, "--verbose"]
    result = helpers.invoke(runner, *args)
    assert result.exit_code == 0
    assert "  wrote ops.h" in result.output
    quiet = helpers.invoke(
        runner, "generate", "--specs", basic_specs, "--out", tmp_path / "q"
    )
    assert "  wrote" not in quiet.output


def _misspelled(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text("ops:\n  - abs.out\n  - sofmax.int_out\n")
    return specs


def test_errors_in_colour_only_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    specs = _misspelled(tmp_path)
    args = ["generate", "--specs", "specs", "--out", "o"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 2 and not ANSI.search(plain.output)
    coloured = CliRunner().invoke(main, args, color=True)
    assert "\x1b[31mspecs/ops.yaml:3:5: torch " in coloured.output
    monkeypatch.setenv("NO_COLOR", "1")
    assert not ANSI.search(CliRunner().invoke(main, args, color=True).output)
    assert specs.exists()


# --- As a new user meets it (a real process, stderr not a terminal) -----------------


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "infiniops_codegen.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_misspelled_overload_is_one_located_line(tmp_path):
    _misspelled(tmp_path)
    proc = _cli("generate", "--specs", "specs", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 2
    errors = proc.stderr.splitlines()
    assert errors[0].startswith(
        f"specs/ops.yaml:3:5: torch {version()} has no ATen overload "
        "'sofmax.int_out'; did you mean 'softmax.int_out'"
    )
    assert errors[1:] == ["1 spec problem; nothing was written"]
    assert proc.stdout == "" and not ANSI.search(proc.stderr)


def test_wrong_opt_level_is_one_clear_line(tmp_path):
    proc = _cli(
        "build", "--opt-level", "4", "--build-dir", tmp_path / "b", cwd=tmp_path
    )
    assert proc.returncode == 2
    error = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert error == [
        "Error: Invalid value for '--opt-level': '4' is not one of "
        "'0', '1', '2', '3', 's'."
    ]
    assert not (tmp_path / "b").exists()


def test_list_op_without_a_recorded_signature_says_so(tmp_path, runner, helpers):
    """A manifest written before signatures were recorded: no guessing from
    stub files, a plain note."""
    _manifest(tmp_path, [_op("old", signature=False)])
    result = helpers.invoke(runner, "list", "--build-dir", tmp_path, "--op", "old")
    assert result.exit_code == 0, result.output
    assert "python:  (not in this manifest: it predates signatures" in result.output
