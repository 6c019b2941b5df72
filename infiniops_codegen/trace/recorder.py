"""The child side of `infiniops-codegen trace`: runs a Python script under a
dispatch-level recorder and writes the ATen ops it called to a JSON file.

    python recorder.py RECORD.json script.py [args...]
    python recorder.py RECORD.json -m module [args...]
    python recorder.py RECORD.json -c CODE [args...]

Run by path, so the script sees neither this package nor its imports: only
the standard library and torch. The recorder is a TorchDispatchMode, so it
sees every operator overload that reaches the dispatcher's Python key,
including those torch.nn modules call, after autograd and after
CompositeImplicitAutograd ops (`aten.linear`) decomposed into what runs
(`aten.t`, `aten.addmm`). Calls made on other threads are not seen (a
dispatch mode is per thread).

The script runs as `__main__` with its own sys.argv; its exit status is this
process's. The record is written however the script ends (return, exception,
sys.exit), except by os._exit or a crash of the interpreter.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

RECORD_FORMAT = 1


def _recorder():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls: dict[str, list] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            entry = self.calls.get(str(func))
            if entry is None:
                entry = self.calls[str(func)] = [0, func]
            entry[0] += 1
            return func(*args, **(kwargs or {}))

    return Recorder()


def _describe(name: str, count: int, func) -> dict:
    """One op's record: the count, its schema, whether it returns an alias
    of an input (a view: `Tensor(a)`) or writes one (`Tensor(a!)`)."""
    schema = getattr(func, "_schema", None)
    returns = list(getattr(schema, "returns", ()))
    aliases = [r.alias_info for r in returns if r.alias_info is not None]
    return {
        "op": name,
        "calls": count,
        "schema": str(schema) if schema is not None else None,
        "view": bool(aliases) and not any(a.is_write for a in aliases),
        "mutates": any(a.is_write for a in aliases),
    }


def _run(argv: list[str]) -> None:
    """Run argv as `python ARGV` would, as __main__."""
    if argv[0] in ("-m", "-c"):  # sys.path[0]: this file's directory
        sys.path[0] = os.getcwd()
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]  # runpy puts the module's path here
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        code = compile(argv[1], "<string>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    else:
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")


def main() -> int:
    record_path, argv = sys.argv[1], sys.argv[2:]
    status, problem, recorder = 0, None, None
    try:
        import torch  # noqa: F401  (the script's torch, imported first)
    except ImportError as e:
        problem = f"torch cannot be imported by {sys.executable}: {e}"
        status = 1
    try:
        if problem is None:
            recorder = _recorder()
            with recorder:
                _run(argv)
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code
        else:  # sys.exit("message"): printed, status 1, as Python does
            print(e.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        calls = recorder.calls if recorder is not None else {}
        record = {
            "format": RECORD_FORMAT,
            "status": status,
            "problem": problem,
            "ops": [_describe(n, c, f) for n, (c, f) in sorted(calls.items())],
        }
        with open(record_path, "w", encoding="utf-8") as f:
            json.dump(record, f)
    sys.stdout.flush()
    sys.stderr.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
