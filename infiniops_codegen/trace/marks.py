"""`infiniops-codegen trace`: the ATen ops a model's script calls, as specs.

The script runs in a child process under recorder.py (a
TorchDispatchMode), which writes every operator overload it called with its
count; each is then marked against the specs and the installed torch's
schemas:

- in the project: its out= overload (or the op itself, called with out=) is
  an op of the specs; native where the spec gives it a native kernel, else
  the torch fallback;
- expressible, not in the specs: an out= overload the generator can express
  (`list --available`) serves it: that line added to a spec file builds it;
- not expressible: why not (a view, no out= overload, an excluded one, ...).

A functional overload is paired with its out= twin as torchgen's
NativeFunctionsGroup pairs them: by signature (schema_db's `functional` of
each out= overload); an in-place one (`add_.Tensor`) by its functional name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..model.ops import OpSet
from ..schema.db import SchemaDB

IN_PROJECT = "in the project"
EXPRESSIBLE = "expressible, not in the specs"
NOT_EXPRESSIBLE = "not expressible"
MARKS = (IN_PROJECT, EXPRESSIBLE, NOT_EXPRESSIBLE)
# --json's spelling of each mark
MARK_KEYS = {
    IN_PROJECT: "in_project",
    EXPRESSIBLE: "expressible",
    NOT_EXPRESSIBLE: "not_expressible",
}

RECORDER = Path(__file__).resolve().parent / "recorder.py"

# Interpreter options that take a value (`python -W error script.py`).
_VALUE_OPTIONS = ("-W", "-X", "--check-hash-based-pycs")


class TraceError(Exception):
    """The command cannot be traced (not a Python command, no such script,
    no record written); the message says why, in one line."""


@dataclass(frozen=True)
class Traced:
    """One ATen (or other) operator overload the script called."""

    op: str  # as torch prints the overload, e.g. "aten.add.Tensor"
    calls: int
    mark: str  # one of MARKS
    out: str | None = None  # the out= overload serving it, e.g. "add.out"
    kind: str | None = None  # in the project: "native" or "fallback"
    name: str | None = None  # in the project: the op's public name
    source: str | None = None  # in the project: the spec file
    native: tuple[str, ...] = ()  # in the project: platforms with a kernel
    reason: str | None = None  # not expressible: why
    schema: str | None = None  # the called overload's schema

    def json(self) -> dict:
        data = asdict(self)
        data["mark"] = MARK_KEYS[self.mark]
        data["native"] = list(self.native)
        return data


@dataclass(frozen=True)
class Trace:
    command: tuple[str, ...]
    status: int  # the script's exit status
    ops: tuple[Traced, ...]  # by count (most first), then name

    def counts(self) -> dict[str, int]:
        return {m: sum(1 for t in self.ops if t.mark == m) for m in MARKS}

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.ops)

    def missing(self) -> dict[str, list[Traced]]:
        """Expressible out= overloads the specs lack -> the traced ops they
        serve (an out= overload serves its functional and in-place ops)."""
        result: dict[str, list[Traced]] = {}
        for t in self.ops:
            if t.mark == EXPRESSIBLE:
                result.setdefault(t.out, []).append(t)
        return dict(sorted(result.items()))


# --- running the script ------------------------------------------------------


def child_command(command: list[str], record: Path) -> list[str]:
    """The command line that runs `command` (python [options] script.py |
    -m module | -c code, [args]; or script.py alone, run by this Python)
    under the recorder, which writes to record."""
    if not command:
        raise TraceError(
            "no command to trace: give it after '--', e.g. "
            "'infiniops-codegen trace -- python model.py'"
        )
    first = command[0]
    if first.endswith(".py"):
        interpreter, rest = [sys.executable], list(command)
    elif re.fullmatch(r"python[0-9.]*(\.exe)?", os.path.basename(first)):
        interpreter, rest = [first], list(command[1:])
    else:
        raise TraceError(
            f"'{first}' is not a Python command: trace runs 'python script.py "
            "[args]', 'python -m module [args]', 'python -c code' or "
            "'script.py [args]' (the recorder lives in the Python process)"
        )
    options = []
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        option = rest.pop(0)
        options.append(option)
        if option in _VALUE_OPTIONS and rest:
            options.append(rest.pop(0))
    if not rest or rest[0] == "-":
        raise TraceError(
            f"'{' '.join(command)}' names no script: give a script, "
            "-m module or -c code (standard input cannot be traced)"
        )
    if rest[0] in ("-m", "-c") and len(rest) < 2:
        raise TraceError(f"'{rest[0]}' needs an argument: {' '.join(command)}")
    if rest[0] not in ("-m", "-c") and not Path(rest[0]).is_file():
        raise TraceError(f"no such script: {rest[0]}")
    return interpreter + options + [str(RECORDER), str(record)] + rest


def run(command: list[str], stdout_to_stderr: bool = False) -> tuple[int, dict]:
    """Run command under the recorder (its stdout and stderr pass through;
    its stdout onto stderr with stdout_to_stderr, so that this process's
    stdout holds only its own report): (its exit status, the record it
    wrote)."""
    with tempfile.TemporaryDirectory(prefix="infiniops-trace-") as tmp:
        record = Path(tmp) / "record.json"
        argv = child_command(command, record)
        try:
            status = subprocess.call(
                argv, stdout=_stderr() if stdout_to_stderr else None
            )
        except OSError as e:
            raise TraceError(f"cannot run {argv[0]}: {e}") from None
        if not record.is_file():
            raise TraceError(
                f"'{' '.join(command)}' exited with status {status} and left "
                "no record (it ended by os._exit or a crash of the "
                "interpreter, or the interpreter could not run the recorder)"
            )
        data = json.loads(record.read_text(encoding="utf-8"))
    if data.get("problem"):
        raise TraceError(data["problem"])
    return status, data


def _stderr():
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stream without a file
        return 2


# --- marking the ops ---------------------------------------------------------


def _aten_key(op: str) -> str | None:
    """'aten.add.Tensor' -> 'add.Tensor', 'aten.relu.default' -> 'relu' (the
    spelling of native_functions.yaml); None outside the aten namespace."""
    parts = op.split(".")
    if len(parts) != 3 or parts[0] != "aten":
        return None
    return parts[1] if parts[2] == "default" else f"{parts[1]}.{parts[2]}"


def _functional_of_inplace(key: str) -> str | None:
    """'add_.Tensor' -> 'add.Tensor', 'relu_' -> 'relu'; None when key is
    no in-place name (dunders such as '__iand__' are not)."""
    base, dot, overload = key.partition(".")
    if not base.endswith("_") or base.endswith("__"):
        return None
    return base[:-1] + dot + overload


def classify(records: list[dict], opset: OpSet, db: SchemaDB) -> list[Traced]:
    """Mark each recorded op (trace_recorder's records) against opset, the
    specs loaded with every expressible out= overload (`--ops all`)."""
    ops = {op.aten: op for op in opset.ops if op.aten}
    excluded = {e.aten: e.reason for e in opset.exclusions}
    twins: dict[str, str] = {}
    for out, schema in sorted(db.out_overloads.items()):
        if schema.functional:
            twins.setdefault(schema.functional, out)
    by_base: dict[str, list[str]] = {}
    for out, schema in db.out_overloads.items():
        by_base.setdefault(schema.base, []).append(out)
    result = []
    for r in records:
        common = {"op": r["op"], "calls": int(r["calls"]), "schema": r.get("schema")}
        key = _aten_key(r["op"])
        if key is None:
            namespace = r["op"].split(".")[0]
            result.append(
                Traced(
                    mark=NOT_EXPRESSIBLE,
                    reason=f"not an ATen operator (namespace {namespace})",
                    **common,
                )
            )
            continue
        if key in db.out_overloads:
            out = key  # called with out=
        else:
            out = twins.get(key) or twins.get(_functional_of_inplace(key) or "")
        if out is None:
            result.append(
                Traced(
                    mark=NOT_EXPRESSIBLE,
                    reason=_no_out_reason(key, r, by_base),
                    **common,
                )
            )
            continue
        op = ops.get(out)
        if op is not None and op.source != "<all>":
            native = tuple(n.platform for n in op.native)
            result.append(
                Traced(
                    mark=IN_PROJECT,
                    out=out,
                    kind="native" if native else "fallback",
                    name=op.name,
                    source=op.source,
                    native=native,
                    **common,
                )
            )
        elif op is not None:
            result.append(Traced(mark=EXPRESSIBLE, out=out, name=op.name, **common))
        else:
            reason = excluded.get(out) or "not in the generator's op set"
            result.append(
                Traced(
                    mark=NOT_EXPRESSIBLE, out=out, reason=f"{out}: {reason}", **common
                )
            )
    return sorted(result, key=lambda t: (-t.calls, t.op))


def _no_out_reason(key: str, record: dict, by_base: dict[str, list[str]]) -> str:
    base = key.split(".")[0]
    if record.get("view"):
        return "view/alias op: returns a view of its input, no compute to serve"
    plain = base[:-1] if base.endswith("_") and not base.endswith("__") else base
    others = sorted(by_base.get(plain, ()))
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        return (
            f"no out= overload with its signature in ATen ({plain}'s take "
            f"other arguments: {shown})"
        )
    if record.get("mutates"):
        return "in-place op with no out= overload in ATen"
    return "no out= overload in ATen"


def trace(
    command: list[str], opset: OpSet, db: SchemaDB, stdout_to_stderr: bool = False
) -> Trace:
    status, data = run(command, stdout_to_stderr)
    return Trace(tuple(command), status, tuple(classify(data["ops"], opset, db)))


# --- reporting ---------------------------------------------------------------


def _detail(t: Traced) -> str:
    if t.mark == IN_PROJECT:
        where = f"{t.name}, {t.source}"
        kind = f"native on {', '.join(t.native)}" if t.native else "fallback"
        return f"{t.out} ({where}; {kind})"
    if t.mark == EXPRESSIBLE:
        return f"add '{t.out}'"
    return t.reason or ""


def _short_mark(t: Traced) -> str:
    return f"{IN_PROJECT}: {t.kind}" if t.mark == IN_PROJECT else t.mark


def summary(result: Trace) -> str:
    c = result.counts()
    kinds = [t.kind for t in result.ops if t.mark == IN_PROJECT]
    return (
        f"{len(result.ops)} ops, {result.calls} calls: "
        f"{c[IN_PROJECT]} in the project ({kinds.count('native')} native, "
        f"{kinds.count('fallback')} fallback), {c[EXPRESSIBLE]} expressible "
        f"but not in the specs, {c[NOT_EXPRESSIBLE]} not expressible"
    )


def lines(result: Trace) -> list[str]:
    """The report as aligned text: calls, op, mark, detail."""
    rows = [(str(t.calls), t.op, _short_mark(t), _detail(t)) for t in result.ops]
    header = ("calls", "op", "mark", "out= overload / reason")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(3)]
    out = []
    for i, row in enumerate([header] + rows):
        cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])]
        cells += [row[2].ljust(widths[2]), row[3]]
        out.append("  ".join(cells).rstrip())
    out.append("")
    out.append(summary(result))
    return out


def json_data(result: Trace, specs: str, torch_version: str) -> dict:
    return {
        "command": list(result.command),
        "exit_status": result.status,
        "specs": specs,
        "torch_version": torch_version,
        "calls": result.calls,
        "counts": {MARK_KEYS[m]: n for m, n in result.counts().items()},
        "ops": [t.json() for t in result.ops],
        "missing": {out: [t.op for t in ts] for out, ts in result.missing().items()},
    }


# --- --write -----------------------------------------------------------------


class WriteError(Exception):
    """--write cannot append to the file; the message says why."""


def hinted_for_all(spec_dir: Path) -> dict[str, str]:
    """out= overloads whose harness hints the full set's hints file holds
    (op_specs/all/hints.yaml) -> where: a spec entry for one is refused
    until its hints move into that entry, so --write leaves them out."""
    from ..base.errors import SpecError
    from ..opspec.entries import ALL_HINTS_FILE, display_path, read_all_hints

    errors: list[SpecError] = []
    shown = display_path(spec_dir / ALL_HINTS_FILE)
    return {
        s.aten: f"{shown}:{s.where.line}"
        for s in read_all_hints(spec_dir, errors)
        if s.aten
    }


def spec_lines(missing: dict[str, list[Traced]], indent: str) -> list[str]:
    """One bulk-form line per out= overload, its calls in a comment."""
    result = []
    for out, traced in missing.items():
        calls = sum(t.calls for t in traced)
        noun = "call" if calls == 1 else "calls"
        if len(traced) == 1:
            ops = traced[0].op
        else:
            ops = ", ".join(f"{t.op} {t.calls}" for t in traced)
        result.append(f"{indent}- {out}  # {calls} {noun} ({ops})")
    return result


def appended_text(text: str | None, missing: dict[str, list[Traced]]) -> str:
    """The spec file's new text: text (None: a new file) with the entries
    inserted after the last item of its `ops:` list (a new `ops:` list at
    the end when it has none). Nothing else changes: comments, order and
    layout stay as they were."""
    import yaml

    if text is None:
        return "ops:\n" + "\n".join(spec_lines(missing, "  ")) + "\n"
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        raise WriteError(f"it is not valid YAML: {e}".replace("\n", " ")) from None
    ops_node = None
    if root is not None:
        if not isinstance(root, yaml.MappingNode):
            raise WriteError("it is not a mapping with an 'ops' list")
        for k, v in root.value:
            if k.value == "ops":
                ops_node = v
    if ops_node is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        return text + sep + "ops:\n" + "\n".join(spec_lines(missing, "  ")) + "\n"
    if (
        not isinstance(ops_node, yaml.SequenceNode)
        or ops_node.flow_style
        or not ops_node.value
    ):
        raise WriteError(
            "its 'ops' is not a block list ('- name' lines), so lines cannot "
            "be appended to it"
        )
    item_indent = " " * ops_node.start_mark.column  # where its '-' are
    end = ops_node.value[-1].end_mark
    lines_ = text.splitlines(keepends=True)
    # insert on the line after the last item (its end mark is on that line's
    # start for a block node, past its last character for a scalar)
    at = end.line if end.column == 0 else end.line + 1
    if at > len(lines_):
        at = len(lines_)
    if at == len(lines_) and lines_ and not lines_[-1].endswith("\n"):
        lines_[-1] += "\n"
    new = [line + "\n" for line in spec_lines(missing, item_indent)]
    return "".join(lines_[:at] + new + lines_[at:])
