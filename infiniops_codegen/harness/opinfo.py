"""Conformance with PyTorch, measured on PyTorch's own sample inputs.

Every OpInfo entry of `torch.testing._internal.common_methods_invocations.op_db`
whose ATen name is an op group of the build is run, sample by sample, as
`ops.<group>(sample.input, *sample.args, **sample.kwargs)`, once without and
once with `out=`, and compared with PyTorch's own call (values, dtype, shape,
exception type, the structseq type of several outputs, fresh results, inputs
left as torch leaves them, out= returned and its version bumped). Each check
is passed, failed, not callable (our argument parsing rejects torch's call
syntax, or the call needs an overload the build lacks; reason kept), not
applicable (with the reason) or skipped (the `opinfo:` section of the skip
file). docs/conformance.md describes the rules.

    python -m infiniops_codegen.harness.opinfo --build-dir build \
        [--skips tests/skips.yaml] [--json FILE] [--ops a,b]

prints the per-op table and exits 1 on any failure or when more than 2% of
the applicable checks are not callable (2: the module, its manifest or the
skip file cannot be read). tests/test_opinfo_conformance.py runs the same
over the default build.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..base.torch_release import applies

PASSED, FAILED, NOT_CALLABLE = "passed", "failed", "not callable"
NOT_APPLICABLE, SKIPPED = "not applicable", "skipped"
STATUSES = (PASSED, FAILED, NOT_CALLABLE, NOT_APPLICABLE, SKIPPED)
PLAIN, OUT = "plain", "out"  # the run without out= and the one with it
MAX_NOT_CALLABLE = 0.02  # of the applicable checks
# The dtype of an entry's samples: float32 where PyTorch's CPU kernel has it,
# else the first of these it has.
DTYPE_ORDER = (
    "float32", "float64", "int64", "int32", "bool", "float16", "bfloat16",
    "int16", "int8", "uint8", "complex64", "complex128",
)  # fmt: skip
LACKS = "an overload the build lacks"
# Provisional: our NotImplementedError, not callable if the overload is lacking.
MAYBE_LACKS = "maybe lacks"
SKIP_KEYS = ("op", "ops", "samples", "out", "torch", "reason")
# Namespaces of PyTorch's generated Python bindings of ATen functions.
_BINDINGS = ("_VariableFunctions", "_nn", "_linalg", "_special", "_fft")


# -- skips ---------------------------------------------------------------------


@dataclass(frozen=True)
class Skip:
    op: str  # a group of the build, or an OpInfo name[.variant]
    reason: str
    samples: tuple[int, ...] = ()  # sample indices; empty: every sample
    out: bool = False  # only the run with out=

    def matches(self, names: tuple[str, ...], index: int, mode: str) -> bool:
        """names: the group, the OpInfo name and name.variant."""
        return (
            self.op in names
            and (not self.samples or index in self.samples)
            and (not self.out or mode == OUT)
        )


def load_skips(path: str | Path | None, torch: str | None = None) -> list[Skip]:
    """The `opinfo:` entries of a skip file (None: no skips) that apply to
    the torch release `torch` (default: the installed one; an entry's
    `torch: ">=2.14"` limits it to a range of releases)."""
    if path is None:
        return []
    data = (yaml.safe_load(Path(path).read_text()) or {}).get("opinfo") or []
    skips = []
    for entry in data:
        if isinstance(entry, dict) and not applies(entry, str(path), torch):
            continue
        names = [entry["op"]] if entry.get("op") else list(entry.get("ops") or ())
        reason = str(entry.get("reason") or "").strip()
        if set(entry) - set(SKIP_KEYS) or not names or not reason:
            raise ValueError(
                f"{path}: every opinfo skip needs 'op' or 'ops' and a 'reason'"
                f" (keys: {', '.join(SKIP_KEYS)}): {entry}"
            )
        samples = tuple(int(i) for i in entry.get("samples") or ())
        skips += [Skip(n, reason, samples, bool(entry.get("out"))) for n in names]
    return skips


# -- results -------------------------------------------------------------------


@dataclass
class Check:
    entry: str  # OpInfo name[.variant]
    index: int  # the sample's index in the entry's samples
    mode: str  # PLAIN or OUT
    status: str
    reason: str = ""
    sample: str = ""  # a short description of the sample's arguments


@dataclass
class OpResult:
    group: str
    overloads: tuple[str, ...]  # the build's ops of the group
    entries: dict[str, str] = field(default_factory=dict)  # entry -> dtype
    samples: int = 0
    checks: list[Check] = field(default_factory=list)

    def counts(self) -> Counter:
        return Counter(c.status for c in self.checks)


@dataclass
class Report:
    torch_version: str
    ops: list[OpResult]
    without_opinfo: tuple[str, ...]  # groups of the build that op_db lacks
    unused_skips: list[str] = field(default_factory=list)  # matched no check
    seconds: float = 0.0

    def checks(self, status: str | None = None) -> list[tuple[str, Check]]:
        return [
            (r.group, c)
            for r in self.ops
            for c in r.checks
            if status is None or c.status == status
        ]

    def totals(self) -> Counter:
        total = Counter({s: 0 for s in STATUSES})
        for r in self.ops:
            total.update(r.counts())
        return total

    def not_callable_share(self) -> float:
        """Not callable / applicable checks (passed, failed, not callable)."""
        t = self.totals()
        applicable = t[PASSED] + t[FAILED] + t[NOT_CALLABLE]
        return t[NOT_CALLABLE] / applicable if applicable else 0.0

    def ok(self) -> bool:
        return (
            not self.totals()[FAILED] and self.not_callable_share() <= MAX_NOT_CALLABLE
        )

    def reasons(self, status: str) -> dict[str, Counter]:
        """reason -> Counter of groups, most frequent reason first."""
        by: dict[str, Counter] = defaultdict(Counter)
        for group, c in self.checks(status):
            by[c.reason][group] += 1
        return dict(sorted(by.items(), key=lambda kv: -sum(kv[1].values())))

    def lines(self) -> list[str]:
        head = ("op", "samples", "checks", PASSED, FAILED, NOT_CALLABLE, "n/a", SKIPPED)
        rows = [head]
        for r in self.ops:
            n = r.counts()
            rows.append((r.group, r.samples, len(r.checks)) + _counts(n))
        t = self.totals()
        samples = sum(r.samples for r in self.ops)
        rows.append(("total", samples, sum(t.values())) + _counts(t))
        widths = [max(len(str(row[k])) for row in rows) for k in range(len(head))]
        lines = [
            "  ".join(
                str(v).ljust(w) if k == 0 else str(v).rjust(w)
                for k, (v, w) in enumerate(zip(row, widths))
            )
            for row in rows
        ]
        entries = sum(len(r.entries) for r in self.ops)
        lines += [
            f"opinfo conformance (torch {self.torch_version}): {entries} OpInfo "
            f"entries of {len(self.ops)} ops, {samples} samples, "
            f"{sum(t.values())} checks (without and with out=): {t[PASSED]} passed,"
            f" {t[FAILED]} failed, {t[NOT_CALLABLE]} not callable "
            f"({100 * self.not_callable_share():.2f}% of the applicable checks, "
            f"bound {100 * MAX_NOT_CALLABLE:.0f}%), {t[NOT_APPLICABLE]} not "
            f"applicable, {t[SKIPPED]} skipped; {self.seconds:.1f} s",
        ]
        for skip in self.unused_skips:
            lines.append(f"skip file entry that matched no check: {skip}")
        if self.without_opinfo:
            lines.append(
                f"ops of the build with no OpInfo entry (not counted): "
                f"{', '.join(self.without_opinfo)}"
            )
        lacking = sum(1 for _, c in self.checks(NOT_CALLABLE) if LACKS in c.reason)
        for status in (NOT_CALLABLE, NOT_APPLICABLE, SKIPPED):
            reasons = self.reasons(status)
            if reasons:
                lines.append(f"{status}, by reason:")
            if reasons and status == NOT_CALLABLE and lacking:
                lines.append(f"  ({lacking} of them resolve to {LACKS})")
            for reason, groups in reasons.items():
                lines.append(
                    f"  {sum(groups.values()):5}  {reason}  "
                    f"[{', '.join(f'{g} {n}' for g, n in groups.most_common())}]"
                )
        failures = self.checks(FAILED)
        if failures:
            lines.append(f"failures ({len(failures)}):")
        for group, c in failures:
            lines.append(
                f"  {group}: {c.entry} sample {c.index} ({c.mode}): {c.reason}"
                f"  | {c.sample}"
            )
        return lines

    def to_json(self) -> dict:
        data = asdict(self)
        data["totals"] = dict(self.totals())
        data["not_callable_share"] = self.not_callable_share()
        return data


def _counts(n: Counter) -> tuple:
    return tuple(n[s] for s in (PASSED, FAILED, NOT_CALLABLE, NOT_APPLICABLE, SKIPPED))


# -- groups and entries ---------------------------------------------------------


def groups_of(manifest) -> dict[str, tuple[str, ...]]:
    """Function name -> the build's ops serving it (the manifest's
    "functions": ops.<name> as torch.<name>, model/overloads.py)."""
    return {
        name: tuple(o.op for o in overloads if o.op)
        for name, overloads in manifest.functions.items()
    }


def group_of(info) -> str:
    """The ATen base name an OpInfo entry tests: its aten_name where PyTorch
    sets one (it defaults to the entry's name, dots included); for
    `nn.functional.<x>` the functional's name (torch.nn.functional.x is the
    Python spelling of ATen's x); else the name with '_' for '.'."""
    if "." not in info.aten_name:
        return info.aten_name
    if info.name.startswith("nn.functional."):
        return info.name[len("nn.functional.") :]
    return info.name.replace(".", "_")


def entry_name(info) -> str:
    return (
        f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name
    )


def sample_dtype(info):
    import torch

    supported = {str(d).removeprefix("torch.") for d in info.supported_dtypes("cpu")}
    for name in DTYPE_ORDER:
        if name in supported:
            return getattr(torch, name)
    return None


def aten_bindings(group: str) -> list:
    """PyTorch's own bindings of the ATen function: its generated Python
    binding (torch.add, torch._C._nn.mse_loss, ...) and its torch.ops.aten
    packet (the schema's defaults: torch._C._nn.mse_loss defaults reduction
    to 0, the schema to Mean), those that exist."""
    import torch

    found = []
    for namespace in _BINDINGS:
        f = getattr(getattr(torch._C, namespace), group, None)
        if f is not None:
            found.append(f)
            break
    try:
        found.append(getattr(torch.ops.aten, group))
    except (AttributeError, RuntimeError):
        pass
    return found


def _is_packet(f) -> bool:
    import torch

    return isinstance(f, torch._ops.OpOverloadPacket)


def _is_binding(f, binding) -> bool:
    return f is binding or (
        _is_packet(f)
        and _is_packet(binding)
        and f._qualified_op_name == binding._qualified_op_name
    )


def _name(f) -> str:
    module = getattr(f, "__module__", None) or ""
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    return f"{module}.{name}" if module else name


# -- one call and its comparison -----------------------------------------------


class Raised:
    """A call's exception, as an outcome."""

    def __init__(self, error: BaseException):
        self.type = type(error)
        self.message = _one_line(str(error))

    def __str__(self) -> str:
        return f"{self.type.__name__}: {self.message}"


def _one_line(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


class Call:
    """A call on a private copy of a sample: its outcome (a value or Raised)
    and the copy's arguments afterwards (some ops write their inputs:
    native_batch_norm's running statistics)."""

    def __init__(self, f, sample, **extra):
        import torch

        self.args = _copied(_args(sample))
        data, args, kwargs = self.args
        torch.manual_seed(0)
        try:
            self.value = f(data, *args, **kwargs, **extra)
        except Exception as e:  # every outcome is compared, exceptions included
            self.value = Raised(e)

    @property
    def raised(self) -> bool:
        return isinstance(self.value, Raised)


def _copied(args):
    """args with every tensor on a copy of its storage (same geometry, and
    tensors that shared a storage still share one)."""
    import torch
    from torch.utils._pytree import tree_map

    storages: dict[int, object] = {}

    def copy(t):
        if not isinstance(t, torch.Tensor):
            return t
        key = t.untyped_storage().data_ptr()
        if key not in storages:
            storages[key] = t.untyped_storage().clone()
        fresh = torch.empty(0, dtype=t.dtype, device=t.device)
        return fresh.set_(storages[key], t.storage_offset(), t.size(), t.stride())

    return tree_map(copy, args)


def _tensors(value) -> list:
    import torch
    from torch.utils._pytree import tree_leaves

    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _storages(value) -> set[int]:
    return {
        t.untyped_storage().data_ptr()
        for t in _tensors(value)
        if t.untyped_storage().nbytes()
    }


def difference(ours, theirs) -> str | None:
    """Why ours is not torch's result (None: it is): type, structseq type,
    dtype, shape and values (equal_nan; exact for integers and bool)."""
    import torch

    if type(ours) is not type(theirs):
        return f"returns {_type(ours)} where torch returns {_type(theirs)}"
    if isinstance(theirs, (tuple, list)):
        if len(ours) != len(theirs):
            return f"returns {len(ours)} results where torch returns {len(theirs)}"
        for k, (a, b) in enumerate(zip(ours, theirs)):
            why = difference(a, b)
            if why:
                return f"result {k}: {why}"
        return None
    if not isinstance(theirs, torch.Tensor):
        return (
            None
            if ours == theirs
            else f"returns {ours!r} where torch returns {theirs!r}"
        )
    if ours.dtype != theirs.dtype:
        return f"dtype {ours.dtype} where torch's is {theirs.dtype}"
    if ours.shape != theirs.shape:
        return f"shape {list(ours.shape)} where torch's is {list(theirs.shape)}"
    try:
        torch.testing.assert_close(ours, theirs, equal_nan=True)
    except AssertionError as e:
        return "values differ: " + _one_line(str(e))
    return None


def _type(value) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def _describe(sample) -> str:
    parts = [_short(sample.input)] + [_short(a) for a in sample.args]
    parts += [f"{k}={_short(v)}" for k, v in sample.kwargs.items()]
    return _one_line(", ".join(parts), 200)


def _short(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        layout = "" if value.is_contiguous() else " non-contiguous"
        dtype = str(value.dtype).removeprefix("torch.")
        return f"Tensor{list(value.shape)} {dtype}{layout}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_short(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return _one_line(repr(value), 40)


def _classify_raise(ours: Raised, theirs) -> tuple[str, str]:
    """Our call raised: passed when torch raised the same type; not callable
    for our TypeError (argument parsing) where torch's was not one; for our
    NotImplementedError, MAYBE_LACKS (the run decides: not callable when
    torch's call resolves to an overload the build lacks); else failed."""
    if isinstance(theirs, Raised) and ours.type is theirs.type:
        return PASSED, ""
    if ours.type is TypeError:
        return NOT_CALLABLE, ours.message
    what = f"raises {theirs.type.__name__}" if isinstance(theirs, Raised) else "returns"
    failed = MAYBE_LACKS if ours.type is NotImplementedError else FAILED
    return failed, f"raises {ours} where torch {what}"


def _args(sample):
    return (sample.input, sample.args, sample.kwargs)


def _inputs(ours: Call, theirs: Call, sample) -> str | None:
    """Whether our call left the inputs as torch's call left them."""
    before = _tensors(_args(sample))
    after = zip(_tensors(ours.args), _tensors(theirs.args), before)
    for k, (a, b, original) in enumerate(after):
        if difference(a, b):
            torch_did = "writes" if difference(b, original) else "leaves"
            return (
                f"input tensor {k} holds other values after the call "
                f"(torch {torch_did} it)"
            )
    return None


def check_plain(f, sample, theirs: Call) -> tuple[str, str]:
    """ours = f(sample) against torch's result (or exception)."""
    ours = Call(f, sample)
    if ours.raised:
        return _classify_raise(ours.value, theirs.value)
    if theirs.raised:
        return FAILED, f"returns where torch raises {theirs.value}"
    why = difference(ours.value, theirs.value) or _inputs(ours, theirs, sample)
    if why:
        return FAILED, why
    inputs_o, inputs_t = _storages(ours.args), _storages(theirs.args)
    for k, (a, b) in enumerate(zip(_tensors(ours.value), _tensors(theirs.value))):
        if _storages(a) & inputs_o and not _storages(b) & inputs_t:
            return FAILED, f"result {k} aliases an input (torch's is a fresh tensor)"
    return PASSED, ""


def _empty_out(result):
    import torch

    if isinstance(result, torch.Tensor):
        return torch.empty_like(result)
    return tuple(torch.empty_like(t) for t in result)


def _torch_out(callables, sample, theirs):
    """(out, call, bumped, callable) of torch's first callable that takes
    out= (an empty_like of each result), else (None, its exception, None,
    None)."""
    first = None
    for g in callables:
        out = _empty_out(theirs)
        versions = [t._version for t in _tensors(out)]
        call = Call(g, sample, out=out)
        if not call.raised:
            bumped = [t._version > v for t, v in zip(_tensors(out), versions)]
            return out, call, bumped, g
        first = first or call.value
    return None, first, None, None


def check_out(info, f, sample, theirs: Call, packet=None) -> tuple[str, str]:
    """ours = f(sample, out=o) against torch's own out= call on a like o: the
    entry's callable, or where that takes no out= and the result is one
    tensor, ATen's overload packet (torch.ops.aten.<group>)."""
    import torch

    result = theirs.value
    if theirs.raised:
        return (
            NOT_APPLICABLE,
            "torch raises without out= (no result to shape out= from)",
        )
    if not isinstance(result, torch.Tensor) and not (
        isinstance(result, tuple) and all(isinstance(t, torch.Tensor) for t in result)
    ):
        return NOT_APPLICABLE, f"torch's result is a {_type(result)}, not tensors"
    single = isinstance(result, torch.Tensor) and packet is not None
    callables = [info.op, packet] if single else [info.op]
    out_t, call_t, bumped_t, used = _torch_out(callables, sample, result)
    if out_t is None:
        return NOT_APPLICABLE, f"torch's call does not take this out=: {call_t}"
    out_o = _empty_out(result)
    versions = [t._version for t in _tensors(out_o)]
    ours = Call(f, sample, out=out_o)
    if ours.raised and ours.value.type is TypeError and used is not info.op:
        return NOT_APPLICABLE, (
            f"torch's {_name(info.op)} takes no out= here, nor does ours "
            f"(torch.ops.aten.{packet.__name__} does)"
        )
    if ours.raised:
        return _classify_raise(ours.value, call_t.value)
    why = difference(out_o, out_t)
    if why:
        return FAILED, f"out= holds other values: {why}"
    why = _inputs(ours, call_t, sample)
    if why:
        return FAILED, why
    ret_o, ret_t = ours.value, call_t.value
    if type(ret_o) is not type(ret_t):
        return FAILED, f"returns {_type(ret_o)} where torch returns {_type(ret_t)}"
    same_t = [a is b for a, b in zip(_tensors(ret_t), _tensors(out_t))]
    same_o = [a is b for a, b in zip(_tensors(ret_o), _tensors(out_o))]
    if same_o != same_t:
        return FAILED, "does not return the out= tensors as torch does"
    bumped_o = [t._version > v for t, v in zip(_tensors(out_o), versions)]
    if bumped_o != bumped_t:
        return FAILED, f"out= _version bumped {bumped_o} where torch's {bumped_t}"
    return PASSED, ""


# -- the run -------------------------------------------------------------------


def _check_entry(ops, info, group, result: OpResult, skips, covered, used) -> None:
    """covered: the functional ATen overloads of the group's ops; used: the
    skips that matched, so far."""
    name = entry_name(info)
    dtype = sample_dtype(info)
    if dtype is None:
        result.entries[name] = "no CPU dtype"
        return
    result.entries[name] = str(dtype).removeprefix("torch.")
    samples = list(info.sample_inputs("cpu", dtype, requires_grad=False))
    result.samples += len(samples)
    f = getattr(ops, group, None)
    bindings = aten_bindings(group)
    wrapper = bool(bindings) and not any(_is_binding(info.op, b) for b in bindings)
    names = (group, info.name, name)
    packet = next((b for b in bindings if _is_packet(b)), None)
    for index, sample in enumerate(samples):
        described, called = _describe(sample), []
        theirs = Call(info.op, sample)
        not_aten = None
        if wrapper:
            via_aten = [Call(b, sample).value for b in bindings]
            if all(_differs(v, theirs.value) for v in via_aten):
                not_aten = (
                    f"torch's {_name(info.op)} is not ATen's {group}: torch's binding "
                    f"{_name(bindings[0])} {_outcome(via_aten[0], theirs.value)} on the "
                    "same call"
                )
        for mode in (PLAIN, OUT):
            skip = next((s for s in skips if s.matches(names, index, mode)), None)
            if skip is not None:
                used.add(skip)
                status, reason = SKIPPED, skip.reason
            elif not_aten:
                status, reason = NOT_APPLICABLE, not_aten
            elif f is None:
                status, reason = NOT_CALLABLE, f"the module has no function '{group}'"
                if mode == OUT:  # still not applicable where torch takes no out=
                    torch_out = check_out(info, _absent, sample, theirs, packet)
                    if torch_out[0] == NOT_APPLICABLE:
                        status, reason = torch_out
            elif mode == PLAIN:
                status, reason = check_plain(f, sample, theirs)
            else:
                status, reason = check_out(info, f, sample, theirs, packet)
            if status in (NOT_CALLABLE, MAYBE_LACKS):
                called = called or [_dispatched(info.op, sample, group)]
                if called[0] and called[0] not in covered:
                    status, reason = NOT_CALLABLE, (
                        f"torch's call resolves to aten.{called[0]}, {LACKS} "
                        f"(its {group}: {', '.join(sorted(covered))})"
                    )
                elif status == MAYBE_LACKS:
                    status = FAILED
            result.checks.append(Check(name, index, mode, status, reason, described))


def _absent(*args, **kwargs):
    raise TypeError("absent")


def functional_overloads(manifest, names) -> set[str]:
    """The functional ATen overloads ('max.dim', 'sum.default') of ops."""
    by_name = manifest.by_name()
    found = set()
    for n in names:
        functional = by_name[n].functional if n in by_name else None
        if functional:
            found.add(functional if "." in functional else functional + ".default")
    return found


def _dispatched(f, sample, group: str) -> str | None:
    """The ATen overload of the group that torch's call resolves to
    ('max.other'): the schema matching of torch.ops.aten.<group>, else the
    first overload of the group that the call dispatches, else None."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        name = torch._C._jit_resolve_packet(
            f"aten::{group}", sample.input, *sample.args, **sample.kwargs
        )
        return f"{group}.{name or 'default'}"
    except Exception:  # not the schema's syntax: watch the dispatcher
        pass
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Record():
        Call(f, sample)
    for func in seen:
        if func.overloadpacket.__name__ == group:
            return f"{group}.{func._overloadname}"
    return None


def _differs(a, b) -> bool:
    if isinstance(a, Raised) or isinstance(b, Raised):
        return not (
            isinstance(a, Raised) and isinstance(b, Raised) and a.type is b.type
        )
    return difference(a, b) is not None


def _outcome(via_aten, theirs) -> str:
    if isinstance(via_aten, Raised):
        return f"raises {via_aten}"
    if isinstance(theirs, Raised):
        return f"returns where the entry raises {theirs.type.__name__}"
    return f"returns another result ({difference(via_aten, theirs)})"


def run(ops, manifest, skips=(), only=None) -> Report:
    """Every OpInfo sample of every group of the build (`only`: these groups)."""
    start = time.perf_counter()
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    groups = groups_of(manifest)
    wanted = set(only) if only else set(groups)
    unknown = wanted - set(groups)
    if unknown:
        raise ValueError(f"not an op group of the build: {', '.join(sorted(unknown))}")
    results: dict[str, OpResult] = {}
    skips, used = list(skips), set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in op_db:
            group = group_of(info)
            if group not in wanted:
                continue
            if group not in results:
                results[group] = OpResult(group, groups[group])
            covered = functional_overloads(manifest, groups[group])
            _check_entry(ops, info, group, results[group], skips, covered, used)
    return Report(
        torch_version=torch.__version__,
        ops=[results[g] for g in sorted(results)],
        without_opinfo=tuple(sorted(wanted - set(results))),
        unused_skips=[
            f"{s.op}: {s.reason}"
            for s in skips
            if s not in used and (only is None or s.op in wanted)
        ],
        seconds=time.perf_counter() - start,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infiniops_codegen.harness.opinfo")
    parser.add_argument("--build-dir", type=Path, default=Path("build"))
    parser.add_argument("--skips", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--ops", default=None, help="comma-separated op groups")
    args = parser.parse_args(argv)
    from ..model import manifest as reader
    from ..runtime import load

    only = [n for n in (args.ops or "").split(",") if n] or None
    try:
        ops = load(args.build_dir)
        built, skips = reader.of_build(args.build_dir), load_skips(args.skips)
        report = run(ops, built, skips, only)
    except (ImportError, reader.ManifestError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    if args.json:
        args.json.write_text(json.dumps(report.to_json(), indent=1, default=str))
    return 0 if report.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
