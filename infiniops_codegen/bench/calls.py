"""How each variant calls an op, and the timed loops that make those calls.

Arguments are known by schema name (configs.py); the op's manifest entry (manifest.Op)
says which are positional, keyword-only or outputs and gives the defaults.
Every variant gets the same values:

  ours       m.<op>(positional..., kw_attr=..., out=..., [implementation=])
             (Python names)
  ours_new   m.<function>(positional..., kw_attr=...): no out=, the outputs
             allocated and returned (torch's API: model/overloads.py)
  torch      torch.<op>(positional..., kw_attr=..., out=o | out=(o1, o2))
  aten       torch.ops.aten.<op>.<overload>(..., <output names>=...)
  floor      floor.<op>(every argument in schema order, positionally)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from time import perf_counter_ns

from ..model.manifest import OUTPUT, Op


@dataclass(frozen=True)
class Call:
    func: object
    args: tuple
    kwargs: tuple[tuple[str, object], ...]

    def __call__(self):
        return self.func(*self.args, **dict(self.kwargs))

    def spelled(self) -> tuple[str, dict]:
        """The call as an expression over local names, `f(a0, a1, out=k0)`,
        and the values of those names (so that a loop can run it with no
        tuple or dict built per call)."""
        env = {"f": self.func}
        parts = []
        for i, value in enumerate(self.args):
            env[f"a{i}"] = value
            parts.append(f"a{i}")
        for i, (key, value) in enumerate(self.kwargs):
            env[f"k{i}"] = value
            parts.append(f"{key}=k{i}")
        return f"f({', '.join(parts)})", env


def _inputs_and_attrs(op: Op, values: dict):
    """(positional values, [(manifest.Argument, value)] of given keyword-only ones)."""
    args = list(op.inputs)
    positional = [a for a in args if not a.keyword_only]
    given = [i for i, a in enumerate(positional) if a.name in values]
    last = max(given, default=-1)
    pos_values = []
    for a in positional[: last + 1]:
        if a.name in values:
            pos_values.append(values[a.name])
        elif a.has_default:
            pos_values.append(a.default)
        else:
            raise ValueError(f"{op.name}: argument '{a.name}' is required")
    for a in positional[last + 1 :]:
        if not a.has_default:
            raise ValueError(f"{op.name}: argument '{a.name}' is required")
    keywords = [
        (a, values[a.name]) for a in args if a.keyword_only and a.name in values
    ]
    return pos_values, keywords


def ours(
    func, op: Op, values: dict, outputs: list, implementation: str | None = None
) -> Call:
    pos, kws = _inputs_and_attrs(op, values)
    kw = [(a.python_name, v) for a, v in kws]
    kw += [(a.python_name, o) for a, o in zip(op.out_args, outputs)]
    if implementation is not None:
        kw.append(("implementation", implementation))
    return Call(func, tuple(pos), tuple(kw))


def ours_new(func, op: Op, values: dict) -> Call:
    pos, kws = _inputs_and_attrs(op, values)
    return Call(func, tuple(pos), tuple((a.python_name, v) for a, v in kws))


def torch_style(func, op: Op, values: dict, outputs: list) -> Call:
    pos, kws = _inputs_and_attrs(op, values)
    kw = [(a.name, v) for a, v in kws]
    kw.append(("out", outputs[0] if len(outputs) == 1 else tuple(outputs)))
    return Call(func, tuple(pos), tuple(kw))


def aten_style(func, op: Op, values: dict, outputs: list) -> Call:
    pos, kws = _inputs_and_attrs(op, values)
    kw = [(a.name, v) for a, v in kws]
    kw += [(a.name, o) for a, o in zip(op.out_args, outputs)]
    return Call(func, tuple(pos), tuple(kw))


def functional(func, op: Op, values: dict) -> Call:
    pos, kws = _inputs_and_attrs(op, values)
    return Call(func, tuple(pos), tuple((a.name, v) for a, v in kws))


def every_input(func, op: Op, values: dict) -> Call:
    """Every non-output argument positionally, defaults filled in."""
    args = []
    for a in op.visible:
        if a.role == OUTPUT:
            continue
        if a.name in values:
            args.append(values[a.name])
        elif a.has_default:
            args.append(a.default)
        else:
            raise ValueError(f"{op.name}: argument '{a.name}' is required")
    return Call(func, tuple(args), ())


def floor(func, op: Op, values: dict, outputs: list) -> Call:
    out_iter = iter(outputs)
    args = []
    for a in op.visible:
        if a.role == OUTPUT:
            args.append(next(out_iter))
        elif a.name in values:
            args.append(values[a.name])
        elif a.has_default:
            args.append(a.default)
        else:
            raise ValueError(f"{op.name}: argument '{a.name}' is required")
    return Call(func, tuple(args), ())


def timed_loop(call: Call, sync=None):
    """loop(n) -> nanoseconds for n calls. The call is spelled out in the
    loop's source (locals, literal keywords), so the loop adds nothing per
    call beyond Python's own CALL of the function (it iterates over
    itertools.repeat: no int object per iteration, no allocation at all).
    sync: called once after the calls, inside the timed span (a device's
    synchronize: asynchronous calls are timed to their end)."""
    expression, env = call.spelled()
    params = ", ".join(["clock", "repeat", "sync", *env])
    source = (
        f"def make({params}):\n"
        "    def loop(n):\n"
        "        t0 = clock()\n"
        "        for _ in repeat(None, n):\n"
        f"            {expression}\n"
        + ("        sync()\n" if sync is not None else "")
        + "        return clock() - t0\n"
        "    return loop\n"
    )
    namespace: dict = {}
    exec(compile(source, "<bench loop>", "exec"), namespace)
    return namespace["make"](perf_counter_ns, itertools.repeat, sync, *env.values())
