"""Re-entrancy fuzz of the built module against PyTorch (run in a child
process by tests/test_fuzz_reentrancy.py, so that a crash is a failed test).

    python tests/reentrancy_fuzz_worker.py BUILD_DIR SEED EXAMPLES_PER_OP [OPS]
        [--skips tests/skips.yaml]

Converting a Python argument can run Python code: an object's __index__ or
__float__, a list subclass's methods. For every op of the build, hypothesis
draws one of the op's int, float, Scalar, bool or list parameters and hands
it a *hostile* object standing for the harness's sample value (an object
with __index__, an int or float subclass with its own conversion methods, a
list subclass, a list with such an element), whose methods run a *hook* that
changes another argument of the same call: empty a list (the tensors an op
takes, or out= given as a list), drop a list's last tensor (its last
reference), resize or free (`set_()`) an input or an output. Each example
runs on one path (the lane, handle reuse, from_blob, the dispatcher, the
native kernel, without out=) at 1 or 2 intra-op threads.

PyTorch's behaviour on the same call is the oracle: where torch has a Python
function that the module's function of the same name mirrors, that function
with a second, identical set of arguments and hooks; otherwise what torch's
argument parser does with such an object for the parameter's type
(ACCEPTANCE: refused with TypeError, or taken, running its hook or not; the
table is checked against torch's own functions by the test) followed by
PyTorch's out= overload (or functional form, or a composite's reference) on
arguments the hook has changed. Either both raise the same exception type,
or both succeed with the same outputs; and the hook ran in ours exactly when
it ran in PyTorch's.

Before every call the case is printed on stdout (`CASE ...`), so that the
parent can show the call that crashed the interpreter. The last line is a
JSON summary.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import torch
from hypothesis import strategies as st

from fuzz_support import run_examples
from infiniops_codegen.model import manifest as reader
from infiniops_codegen.schema.arg_kinds import Tensors
from infiniops_codegen.harness import run as harness
from infiniops_codegen.harness.samples import hinted_plans

STATS = {
    "calls": 0,
    "examples": 0,
    "by_oracle": {},
    "by_wrapper": {},
    "per_op": {},
    "eligible": set(),
}
PATHS = ("lane", "reuse", "from_blob", "dispatcher", "native", "no_out")


# --- hostile objects -------------------------------------------------------------


class Hook:
    """The change a conversion method makes to the call's other arguments,
    counted."""

    def __init__(self, change):
        self.change = change
        self.calls = 0

    def __call__(self):
        self.calls += 1
        self.change()


def _index_object(value, hook):
    class Index:
        def __index__(self):
            hook()
            return value

        def __repr__(self):
            return f"Index({value})"

    return Index()


def _int_sub(value, hook):
    class IntSub(int):
        def __index__(self):
            hook()
            return int(self)

        def __int__(self):
            hook()
            return int.__int__(self)

        def __float__(self):
            hook()
            return float(int(self))

    return IntSub(value)


def _float_sub(value, hook):
    class FloatSub(float):
        def __float__(self):
            hook()
            return float.__float__(self)

    return FloatSub(value)


def _float_object(value, hook):
    class Floaty:
        def __float__(self):
            hook()
            return float(value)

        def __repr__(self):
            return f"Floaty({value})"

    return Floaty()


def _list_sub(value, hook):
    class ListSub(list):
        def __len__(self):
            hook()
            return list.__len__(self)

        def __iter__(self):
            hook()
            return list.__iter__(self)

        def __getitem__(self, k):
            hook()
            return list.__getitem__(self, k)

    return ListSub(value)


def _with_item(value, k, make, hook):
    items = list(value)
    items[k] = make(items[k], hook)
    return items


# What PyTorch's Python argument parser does with each hostile object, by the
# parameter's type: "accept" (the hook does not run), "hook" (taken, its
# hook runs), "type" (TypeError, no hook) or "runtime" (RuntimeError, after
# its hook ran: torch 2.13's parser checks a single __index__ for an int[N]
# and then fails an internal assert converting it). test_fuzz_reentrancy
# checks this table against torch's own functions.
ACCEPTANCE = {
    ("int", "index"): "type",
    ("int", "int_sub"): "accept",
    ("int", "float_sub"): "type",
    ("SymInt", "index"): "hook",
    ("SymInt", "int_sub"): "accept",
    ("SymInt", "float_sub"): "type",
    ("float", "index"): "type",
    ("float", "int_sub"): "hook",
    ("float", "float_sub"): "accept",
    ("float", "float_object"): "type",
    ("Scalar", "index"): "type",
    ("Scalar", "int_sub"): "accept",
    ("Scalar", "float_sub"): "accept",
    ("Scalar", "float_object"): "type",
    ("bool", "int_sub"): "type",
    ("bool", "index"): "type",
    ("int[]", "list_sub"): "accept",
    ("int[]", "item_index"): "hook",
    ("int[]", "item_int_sub"): "accept",
    ("int[N]", "int_sub"): "accept",
    ("int[N]", "index"): "runtime",
    ("Tensor[]", "list_sub"): "accept",
    ("Scalar[]", "list_sub"): "accept",
    ("Scalar[]", "item_int_sub"): "accept",
    ("float[]", "item_float_object"): "hook",
}


def param_type(arg) -> str | None:
    """The parameter's row of ACCEPTANCE; None: no hostile object for it."""
    kind = arg.kind
    if kind is None or kind.tensors is Tensors.ONE:
        return None
    if kind.tensors is Tensors.LIST:
        return None if kind.elem_optional else "Tensor[]"
    base = arg.aten_type.split("[")[0].rstrip("?")
    if kind.is_list:
        return {"int": "int[]", "SymInt": "int[]", "Scalar": "Scalar[]"}.get(
            base, "float[]" if base == "float" else None
        )
    return base if base in ("int", "SymInt", "float", "Scalar", "bool") else None


def wrappers_for(ptype: str, value) -> list[str]:
    """The hostile objects that can stand for value as this type."""
    out = []
    if ptype in ("int", "SymInt", "bool") and isinstance(value, int):
        out += ["index", "int_sub"] + (["float_sub"] if ptype != "bool" else [])
    if ptype in ("float", "Scalar") and isinstance(value, (int, float)):
        out += ["index", "float_sub", "float_object"]
        if isinstance(value, int) or float(value).is_integer():
            out.append("int_sub")
    if ptype == "int[]" and isinstance(value, (list, tuple)):
        out.append("list_sub")
        if value:
            out += ["item_index", "item_int_sub"]
    if ptype == "int[]" and isinstance(value, int):
        out += ["int_sub", "index"]
    if ptype in ("Tensor[]", "Scalar[]") and isinstance(value, (list, tuple)):
        out.append("list_sub")
        if ptype == "Scalar[]" and any(isinstance(v, int) for v in value):
            out.append("item_int_sub")
    if ptype == "float[]" and isinstance(value, (list, tuple)) and len(value) > 1:
        out.append("item_float_object")
    return out


def outcome_row(ptype: str, wrapper: str, value) -> str:
    if ptype == "int[]" and not isinstance(value, (list, tuple)):
        ptype = "int[N]"  # one int for an int[N]
    return ACCEPTANCE[(ptype, wrapper)]


def represented(wrapper: str, value):
    """The plain value a hostile object stands for (an int subclass of
    1.0 is the int 1)."""
    if wrapper in ("index", "int_sub"):
        return int(value)
    if wrapper == "float_sub":
        return float(value)
    return value


def hostile(wrapper: str, value, hook, position: int):
    if wrapper == "index":
        return _index_object(int(value), hook)
    if wrapper == "int_sub":
        return _int_sub(int(value), hook)
    if wrapper == "float_sub":
        return _float_sub(float(value), hook)
    if wrapper == "float_object":
        return _float_object(value, hook)
    if wrapper == "list_sub":
        return _list_sub(value, hook)
    if wrapper == "item_index":
        return _with_item(value, position % len(value), _index_object, hook)
    if wrapper == "item_int_sub":
        ints = [k for k, v in enumerate(value) if isinstance(v, int)]
        return _with_item(value, ints[position % len(ints)], _int_sub, hook)
    if wrapper == "item_float_object":
        return _with_item(value, 1 + position % (len(value) - 1), _float_object, hook)
    raise AssertionError(wrapper)


# --- the changes a hook makes ----------------------------------------------------


# (op, argument) -> changes not made: PyTorch's own call crashes on them
# (the `reentrancy:` section of tests/skips.yaml).
EXCLUDED: dict[tuple[str, str], set[str]] = {}


def read_exclusions(path: str) -> None:
    import yaml

    for entry in (yaml.safe_load(open(path)) or {}).get("reentrancy") or []:
        assert entry.get("reason"), f"{path}: a reentrancy entry without a reason"
        for name in entry["arguments"]:
            EXCLUDED.setdefault((entry["op"], name), set()).update(entry["changes"])


def targets(op, args: dict, outs: list, param: str) -> list[tuple[str, str]]:
    """(change, target) pairs for the other arguments of a call: an input by
    its schema name, the k-th output as `#out<k>`, out= as a list `#outs`;
    those of EXCLUDED left out (and counted)."""
    found = [("nothing", "")]
    for a in op.inputs:
        value = args.get(a.name)
        if a.name == param or value is None:
            continue
        if isinstance(value, torch.Tensor):
            found += [("resize", a.name), ("free", a.name)]
        elif isinstance(value, list) and value and isinstance(value[0], torch.Tensor):
            found += [("clear", a.name), ("pop", a.name)]
    for k, o in enumerate(outs):
        if isinstance(o, torch.Tensor):
            found += [("resize", f"#out{k}"), ("free", f"#out{k}")]
    if len(outs) > 1:
        found += [("clear", "#outs"), ("pop", "#outs")]
    kept = [(c, t) for c, t in found if c not in EXCLUDED.get((op.name, t), ())]
    STATS["excluded_changes"] = (
        STATS.get("excluded_changes", 0) + len(found) - len(kept)
    )
    return kept


class State:
    """One call's arguments, private (fresh copies), with the hostile object
    in place; the same for PyTorch's call and ours."""

    def __init__(self, op, base_args, base_outs, param, wrapper, change, target, pos):
        self.op = op
        self.args = {k: _copy(v) for k, v in base_args.items()}
        # outs: a list object (out= as a list, for several outputs)
        self.outs = [_copy(o) for o in base_outs]
        self.hook = Hook(self._changer(change, target))
        self.value = represented(wrapper, base_args[param])
        self.args[param] = hostile(wrapper, base_args[param], self.hook, pos)
        self.param = param
        # torch's parser reads out= (as a list) after it checked the
        # arguments: the hook of a SymInt or of an int list's first element
        # has run then, any other not yet
        first = wrapper == "index" or (
            wrapper == "item_index" and pos % len(self.value) == 0
        )
        self.hook_checks = first and param_type(op.argument(param)) in (
            "SymInt",
            "int[]",
        )
        self.outs_read = list(self.outs)

    def _object(self, target):
        if target == "#outs":
            return self.outs
        if target.startswith("#out"):
            return self.outs[int(target[4:])]
        return self.args[target]

    def _changer(self, change, target):
        if change == "nothing":
            return lambda: None
        if change == "clear":
            return lambda: self._object(target).clear()
        if change == "pop":
            return lambda: self._object(target) and self._object(target).pop()
        if change == "resize":
            # 1,000 elements: a new, larger buffer (the old one freed),
            # filled so that both calls see the same values
            return lambda: self._object(target).resize_(1000).copy_(_FILL)
        if change == "free":
            return lambda: self._object(target).set_()
        raise AssertionError(change)


_FILL = torch.linspace(-2, 2, 1000)


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# --- calls ------------------------------------------------------------------------


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"T{tuple(value.shape)}:{str(value.dtype)[6:]}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value)


def _outcome(fn):
    """(None, result) or (the exception, None)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return None, fn()
    except Exception as e:  # noqa: BLE001 - compared by type
        return e, None


def _call_args(op, args: dict):
    positional = [args[a.name] for a in op.inputs if not a.keyword_only]
    kwargs = {a.python_name: args[a.name] for a in op.inputs if a.keyword_only}
    return positional, kwargs


def _out_kwargs(op, outs, with_out: bool) -> dict:
    if not with_out:
        return {}
    if len(op.out_args) == 1:
        return {op.out_args[0].python_name: outs[0]}
    return {"out": outs}  # the list object itself


# The module's functions named as torch's (the build's manifest): name ->
# signatures, each naming the op serving it.
FUNCTIONS = {}


def torch_function(op):
    """(name, torch's function) of the module function that op serves under
    torch's name, or None."""
    for name, overloads in FUNCTIONS.items():
        if any(o.op == op.name for o in overloads):
            for namespace in (
                torch,
                torch._C._nn,
                torch._C._linalg,
                torch._C._special,
                torch._C._fft,
            ):
                fn = getattr(namespace, name, None)
                if fn is not None:
                    return name, fn
    return None


def _results(op, state: State, with_out: bool, returned):
    if with_out:  # the outputs as the call took them (a hook may empty out=)
        return list(state.outs_read)
    if isinstance(returned, torch.Tensor):
        return [returned]
    return list(returned)


def _same(ours, theirs, what: str):
    assert len(ours) == len(theirs), f"{what}: {len(ours)} outputs vs {len(theirs)}"
    for a, b in zip(ours, theirs):
        if isinstance(b, (list, tuple)):
            _same(list(a), list(b), what)
            continue
        assert a.shape == b.shape, f"{what}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs {b.dtype}"
        tol = harness.tolerance(b.dtype if b.is_floating_point() else torch.int64)
        try:
            torch.testing.assert_close(a, b, equal_nan=True, **tol)
        except AssertionError as e:
            raise AssertionError(f"{what}: {e}") from None


def derived_reference(op, state: State, row: str, with_out: bool):
    """PyTorch's outcome by ACCEPTANCE: TypeError, or its reference on the
    arguments as the hook left them."""
    if row == "type":
        return TypeError("refused by torch's parser"), None, False
    ran = row in ("hook", "runtime")
    if ran:
        state.hook()
    if row == "runtime":
        return RuntimeError("refused by torch's parser after __index__"), None, True
    args = dict(state.args)
    args[state.param] = state.value
    outs = state.outs if state.hook_checks else state.outs_read
    if with_out and len(outs) != len(op.out_args):
        return TypeError("out= no longer holds the outputs"), None, ran
    harness._reseed(op)
    if with_out:  # the outputs (a composite's reference: its results)
        error, results = _outcome(lambda: harness.reference_out(op, args, outs))
    else:
        error, results = _outcome(lambda: harness.expected(op, args))
    return error, results, ran


def by_design(path: str, ours_error, theirs_error) -> str | None:
    """Why ours may raise where PyTorch does not (documented), or None."""
    if ours_error is None or type(ours_error) is type(theirs_error):
        return None
    text = str(ours_error)
    if path == "native" and isinstance(ours_error, NotImplementedError):
        return "the native kernel refuses this call (implementation='native')"
    if (
        path == "from_blob"
        and isinstance(ours_error, RuntimeError)
        and "from_blob" in text
    ):
        return "a from_blob output cannot be resized or restrided (documented)"
    return None


def run_example(m, op, plan, data) -> None:
    inputs = {a.name: a for a in op.inputs}
    candidates = []
    args0 = harness.materialize(plan, torch.float32, "contiguous", seed=1)
    for name, a in inputs.items():
        ptype = param_type(a)
        if ptype and args0.get(name) is not None:
            for w in wrappers_for(ptype, args0[name]):
                candidates.append((name, ptype, w))
    if not candidates:
        return
    STATS["eligible"].add(op.name)  # an op with a parameter to fuzz
    param, ptype, wrapper = data.draw(st.sampled_from(candidates))
    paths = list(PATHS)
    if not op.out_optional:
        paths.remove("no_out")
    if not op.implementations.native_dtypes("cpu"):
        paths.remove("native")
    path = data.draw(st.sampled_from(paths))
    threads = data.draw(st.sampled_from([1, 2]))
    with_out = path != "no_out"
    if with_out:
        wanted = harness.expected(op, harness.fresh(op, args0))
        if not wanted:
            wanted = harness.reference_out(
                op, harness.fresh(op, args0), harness._guess_outs(op, args0)
            )
        outs0 = harness.sentinel_outs(wanted, False)
    else:
        outs0 = []
    change, target = data.draw(st.sampled_from(targets(op, args0, outs0, param)))
    pos = data.draw(st.integers(0, 7))
    row = outcome_row(ptype, wrapper, args0[param])
    STATS["examples"] += 1
    desc = (
        f"{op.name} {param}:{ptype}={wrapper}({_describe(args0[param])}) "
        f"hook={change}:{target or '-'} path={path} threads={threads}"
    )
    print("CASE", desc, flush=True)
    torch.set_num_threads(threads)

    # PyTorch's behaviour: its own function where the module mirrors one.
    found = torch_function(op)
    theirs_state = State(op, args0, outs0, param, wrapper, change, target, pos)
    oracle = "derived"
    if found is not None:
        name, fn = found
        pos_args, kwargs = _call_args(op, theirs_state.args)
        # the plain call first: torch's function must take it as the module's does
        p_args, p_kwargs = _call_args(op, {k: _copy(v) for k, v in args0.items()})
        p_outs = _out_kwargs(op, [_copy(o) for o in outs0], with_out)
        base_error, _ = _outcome(lambda: fn(*p_args, **p_kwargs, **p_outs))
        if base_error is None:
            oracle = "torch"
            harness._reseed(op)
            theirs_error, returned = _outcome(
                lambda: fn(
                    *pos_args, **kwargs, **_out_kwargs(op, theirs_state.outs, with_out)
                )
            )
            theirs = None
            if theirs_error is None:
                theirs = _results(op, theirs_state, with_out, returned)
            theirs_ran = theirs_state.hook.calls > 0
    if oracle == "derived":
        theirs_error, theirs, theirs_ran = derived_reference(
            op, theirs_state, row, with_out
        )
    STATS["by_oracle"][oracle] = STATS["by_oracle"].get(oracle, 0) + 1
    STATS["by_wrapper"][wrapper] = STATS["by_wrapper"].get(wrapper, 0) + 1

    ours_state = State(op, args0, outs0, param, wrapper, change, target, pos)
    callee = getattr(m, found[0] if oracle == "torch" else op.name)
    pos_args, kwargs = _call_args(op, ours_state.args)
    extra = {"implementation": "native"} if path == "native" else {}
    switches = "reuse" if path in ("native", "no_out") else path
    STATS["calls"] += 1
    per = STATS["per_op"].setdefault(op.name, 0)
    STATS["per_op"][op.name] = per + 1
    with harness.path_switches(m, switches):
        torch.set_num_threads(1 if switches == "lane" else threads)
        harness._reseed(op)
        ours_error, returned = _outcome(
            lambda: callee(
                *pos_args,
                **kwargs,
                **_out_kwargs(op, ours_state.outs, with_out),
                **extra,
            )
        )
    ours_ran = ours_state.hook.calls > 0
    if by_design(path, ours_error, theirs_error):
        return
    assert (
        ours_ran == theirs_ran
    ), f"{desc} [{oracle}]: the hook ran in {'ours' if ours_ran else 'PyTorch'} only"
    if theirs_error is not None or ours_error is not None:
        assert type(ours_error) is type(theirs_error), (
            f"{desc} [{oracle}]\n  PyTorch: {type(theirs_error).__name__}: {theirs_error}\n"
            f"  ours:    {type(ours_error).__name__}: {ours_error}"
        )
        return
    ours = _results(op, ours_state, with_out, returned)
    _same(ours, theirs, f"{desc} [{oracle}]")


def fuzz_op(m, op, seed_value: int, examples: int) -> str | None:
    plan = harness.find_plan(op, torch.float32)
    if plan is None:
        return None
    plan = hinted_plans(op, plan)[0]

    return run_examples(
        lambda data: run_example(m, op, plan, data), seed_value, examples
    )


def main() -> int:
    argv = sys.argv[1:]
    skips = "tests/skips.yaml"
    if "--skips" in argv:
        k = argv.index("--skips")
        skips = argv[k + 1]
        del argv[k : k + 2]
    build_dir, seed_value, examples = argv[0], int(argv[1]), int(argv[2])
    only = set(argv[3].split(",")) if len(argv) > 3 and argv[3] else None
    read_exclusions(skips)
    from infiniops_codegen.runtime import load

    m = load(build_dir)
    built = reader.of_build(build_dir)
    FUNCTIONS.update(built.functions)
    print(f"SEED {seed_value}", flush=True)
    failures = {}
    start = time.perf_counter()
    for k, op in enumerate(built.ops):
        if only and op.name not in only:
            continue
        failure = fuzz_op(m, op, seed_value + k, examples)
        if failure:
            failures[op.name] = failure
    summary = {
        "seed": seed_value,
        "ops": len(STATS["per_op"]),
        # the build's ops with an int, float, Scalar, bool or list parameter
        "eligible": len(STATS["eligible"]),
        "calls": STATS["calls"],
        "examples": STATS["examples"],
        "by_oracle": STATS["by_oracle"],
        "by_wrapper": STATS["by_wrapper"],
        # (change, target) pairs left out by the skip file, over all draws
        "excluded_changes": STATS.get("excluded_changes", 0),
        "failures": failures,
        "seconds": round(time.perf_counter() - start, 2),
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
