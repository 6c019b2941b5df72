"""Python code run while an argument converts (issue 26): the bindings
convert every argument but the tensors, in PyTorch's order, before they take
any pointer into a tensor or a list, and accept exactly what PyTorch's
argument parser accepts.

- the calls of the issue, which crashed the interpreter or read freed memory,
  raise what PyTorch raises;
- ACCEPTANCE, the re-entrancy fuzz's model of PyTorch's parser, is checked
  against torch's own functions, and the module against it, object by
  object and hook call by hook call;
- the re-entrancy fuzz (tests/reentrancy_fuzz_worker.py) runs in a child
  process: every op of the build, hostile objects whose hooks change the
  call's other arguments, on every path; the same outcome as PyTorch's.

INFINIOPS_REENTRANCY_SEED (one seed, or several separated by spaces or
commas: a test each) and INFINIOPS_REENTRANCY_EXAMPLES (examples per op)
change the run; the defaults are fixed so that CI is reproducible.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

from runtime_conftest_helpers import REPO, build_dir
from test_fuzz_runtime import run_worker

sys.path.insert(0, str(REPO / "tests"))
import reentrancy_fuzz_worker as worker  # noqa: E402
from infiniops_codegen.model import manifest as reader  # noqa: E402

WORKER = REPO / "tests" / "reentrancy_fuzz_worker.py"
SEEDS = [
    int(seed)
    for seed in os.environ.get("INFINIOPS_REENTRANCY_SEED", "20261204")
    .replace(",", " ")
    .split()
]
EXAMPLES_PER_OP = int(os.environ.get("INFINIOPS_REENTRANCY_EXAMPLES", "40"))
TIMEOUT_S = 900
MIN_OPS = 90

# Seed -> the counts of its run, read by pytest_terminal_summary
# (tests/conftest.py).
STATS: dict[int, dict] = {}


class Hook:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


def _outcome(fn) -> str:
    try:
        fn()
    except TypeError:
        return "type"
    except RuntimeError:
        return "runtime"
    return "ok"


# (ACCEPTANCE row, wrapper, the sample value, a call of torch's function or
# the module's of the same name with the hostile object)
x = torch.randn(3, 4)
CASES = [
    ("int", "index", 1, lambda m, o: m.cumsum(x, o)),
    ("int", "int_sub", 1, lambda m, o: m.cumsum(x, o)),
    ("int", "float_sub", 1, lambda m, o: m.cumsum(x, o)),
    ("SymInt", "index", 2, lambda m, o: m.topk(torch.randn(5), o)),
    ("SymInt", "int_sub", 2, lambda m, o: m.topk(torch.randn(5), o)),
    ("SymInt", "float_sub", 2, lambda m, o: m.topk(torch.randn(5), o)),
    ("float", "index", 1, lambda m, o: m.native_layer_norm(x, [4], None, None, o)),
    ("float", "int_sub", 1, lambda m, o: m.native_layer_norm(x, [4], None, None, o)),
    (
        "float",
        "float_sub",
        1e-5,
        lambda m, o: m.native_layer_norm(x, [4], None, None, o),
    ),
    (
        "float",
        "float_object",
        1e-5,
        lambda m, o: m.native_layer_norm(x, [4], None, None, o),
    ),
    ("Scalar", "index", 2, lambda m, o: m.add(x, x, alpha=o)),
    ("Scalar", "int_sub", 2, lambda m, o: m.add(x, x, alpha=o)),
    ("Scalar", "float_sub", 2.5, lambda m, o: m.add(x, x, alpha=o)),
    ("Scalar", "float_object", 2.5, lambda m, o: m.add(x, x, alpha=o)),
    ("bool", "int_sub", 1, lambda m, o: m.topk(torch.randn(5), 1, largest=o)),
    ("bool", "index", 1, lambda m, o: m.topk(torch.randn(5), 1, largest=o)),
    ("int[]", "list_sub", [0], lambda m, o: m.flip(x, o)),
    ("int[]", "item_index", [0, 1], lambda m, o: m.flip(x, o)),
    ("int[]", "item_int_sub", [0, 1], lambda m, o: m.flip(x, o)),
    ("int[N]", "int_sub", 1, lambda m, o: m.roll(x, 1, o)),
    ("int[N]", "index", 1, lambda m, o: m.roll(x, 1, o)),
    ("Tensor[]", "list_sub", [x, x], lambda m, o: m.cat(o)),
]
# Kinds no op of the default build takes, checked against PyTorch alone.
TORCH_ONLY = [
    ("Scalar[]", "list_sub", [1, 2], lambda m, o: m._foreach_add([x, x], o)),
    ("Scalar[]", "item_int_sub", [1, 2], lambda m, o: m._foreach_add([x, x], o)),
    (
        "float[]",
        "item_float_object",
        [2.0, 2.0],
        lambda m, o: m._C._nn.upsample_nearest2d(torch.randn(1, 1, 2, 2), None, o),
    ),
]


def _expected(row: str) -> tuple[str, bool]:
    """(outcome, whether the hook runs) of an ACCEPTANCE row."""
    return {
        "accept": ("ok", False),
        "hook": ("ok", True),
        "type": ("type", False),
        "runtime": ("runtime", True),
    }[row]


def _check(module, ptype, wrapper, value, call):
    hook = Hook()
    hostile = worker.hostile(wrapper, value, hook, 1)
    outcome = _outcome(lambda: call(module, hostile))
    return outcome, hook.calls > 0


@pytest.mark.parametrize(
    "ptype, wrapper, value, call",
    CASES + TORCH_ONLY,
    ids=[f"{c[0]}-{c[1]}" for c in CASES + TORCH_ONLY],
)
def test_acceptance_table_is_torchs(ptype, wrapper, value, call):
    """The fuzz's model of PyTorch's parser is PyTorch's: the outcome and
    whether the hook ran, on torch's own function."""
    row = worker.ACCEPTANCE[(ptype, wrapper)]
    assert _check(torch, ptype, wrapper, value, call) == _expected(row)


@pytest.mark.parametrize(
    "ptype, wrapper, value, call", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_module_accepts_what_torch_accepts(ops, ptype, wrapper, value, call):
    """The module's function of the same name: the same outcome, and the
    hook runs exactly where torch's runs it."""
    assert _check(ops, ptype, wrapper, value, call) == _check(
        torch, ptype, wrapper, value, call
    )


class _Index:
    """An int whose conversion runs code (the issue's `E`)."""

    def __init__(self, change, value):
        self.change, self.value = change, value

    def __index__(self):
        self.change()
        return self.value


def _issue_calls(module):
    """The issue's four calls, each on fresh arguments: the exception type
    (or None)."""
    outcomes = []
    outs = [torch.empty(5), torch.empty(5, dtype=torch.long)]
    outcomes.append(
        _raised(lambda: module.topk(torch.randn(40), _Index(outs.clear, 5), out=outs))
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        items = [torch.randn(3), torch.randn(3)]
        outcomes.append(
            _raised(
                lambda: module.cat(items, _Index(items.clear, 0), out=torch.empty(6))
            )
        )
        items = [torch.randn(3), torch.randn(3)]
        outcomes.append(_raised(lambda: module.cat(items, _Index(items.clear, 0))))
    finally:
        torch.set_num_threads(threads)
    t = torch.randn(1000)
    outcomes.append(
        _raised(
            lambda: module.add(
                t,
                torch.randn(1000),
                alpha=_Index(lambda: t.resize_(1 << 20), 2),
                out=torch.empty(1000),
            )
        )
    )
    return outcomes


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared by type
        return type(e)
    return None


def test_the_issues_calls_raise_what_torch_raises(ops):
    """They crashed the interpreter (SIGSEGV) or read freed memory; PyTorch
    raises TypeError for each."""
    theirs = _issue_calls(torch)
    assert theirs == [TypeError] * 4
    assert _issue_calls(ops) == theirs


def test_out_list_emptied_while_checking_is_refused(ops):
    """out= given as a list is read after the SymInts' __index__ ran, as
    PyTorch reads it: emptied there, the call raises TypeError; emptied by a
    later conversion (a float's __float__), the call has its outputs."""
    values, indices = torch.empty(0), torch.empty(0, dtype=torch.long)
    outs = [values, indices]
    with pytest.raises(TypeError):
        ops.topk(torch.randn(10), _Index(outs.clear, 3), out=outs)
    x = torch.randn(2, 3, 4)
    outs = [torch.empty(0), torch.empty(0), torch.empty(0)]
    held = list(outs)

    class Eps(int):
        def __float__(self):
            outs.clear()
            return 1e-5

    ours = ops.native_layer_norm(x, [4], None, None, Eps(0), out=outs)
    assert outs == [] and all(a is b for a, b in zip(ours, held))
    torch.testing.assert_close(
        held[0], torch.native_layer_norm(x, [4], None, None, 1e-5)[0]
    )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_reentrancy_fuzz_matches_pytorch(ops, seed):
    """Every op with an int, float, Scalar, bool or list parameter, hostile
    objects whose hooks empty lists, drop tensors, resize or free inputs and
    outputs, on every path at 1 and 2 threads: no crash, PyTorch's outcome."""
    cmd = [
        sys.executable,
        str(WORKER),
        str(build_dir()),
        str(seed),
        str(EXAMPLES_PER_OP),
    ]
    summary = run_worker(cmd, timeout=TIMEOUT_S)
    STATS[seed] = {
        "calls": summary["calls"],
        "examples": summary["examples"],
        "ops": summary["ops"],
        "seconds": summary["seconds"],
        "by_oracle": summary["by_oracle"],
        "excluded": summary["excluded_changes"],
    }
    failures = summary["failures"]
    assert not failures, (
        f"{len(failures)} ops differ from PyTorch (seed {seed}; reproduce: "
        f"{' '.join(cmd)} OP):\n\n" + "\n\n".join(failures.values())
    )
    # every op of the build with a parameter to fuzz was fuzzed; a build of
    # the default set has at least MIN_OPS of them (a smaller selection,
    # such as the sanitizer job's covering one, fewer)
    assert summary["ops"] == summary["eligible"], summary
    if reader.of_build(build_dir()).selection == "default":
        assert summary["ops"] >= MIN_OPS, summary["ops"]
    # both oracles in use: torch's own functions and the parser model
    assert summary["by_oracle"].get("torch", 0) > 0
    assert summary["by_oracle"].get("derived", 0) > 0
