"""A timing worker process, driven over a pipe by runner.py.

A process hosts one or more roles, which then share the argument and output
tensors (same memory, same pages: a fair comparison for memory-bound ops).
The before and after builds must live in different processes: both modules
are named `infiniops`, and an extension module loads once per process.

Roles:
  reference  torch.<op>(..., out=) from Python (torch.ops.aten.<overload>
             when there is no such function)
  before     the before build, handle reuse off (the from_blob path)
  after      the after build, handle reuse on, default implementation
  floor      the bench's own floor extension (floor.py)

Requests (tuples) and their replies ("ok", value) or ("error", text):
  (start)                           -> {role: module switches} (before/after)
  ("setup", config, manifest_entry) -> {role: {"match": bool, "call": str}}
  ("calibrate", role, target_ns)    -> estimated ns per call
  ("time", role, n, warm)           -> ns taken by n calls (after one
                                       untimed call when warm)
  ("close",)
"""

from __future__ import annotations

import gc
from pathlib import Path

from . import calls, cases

ROLES = ("reference", "before", "after", "floor")  # the order of a round
# Which roles share a process (and their tensors).
PROCESSES = (("reference", "after", "floor"), ("before",))


def _aten_overload(name: str):
    import torch

    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _reference_candidates(entry: dict):
    """(label, callable, call builder), best first: the public Python
    function, then torch._C._nn, then the aten overload itself."""
    import torch

    base = entry["aten"].split(".")[0]
    found = []
    for prefix, namespace in (("torch", torch), ("torch._C._nn", torch._C._nn)):
        fn = getattr(namespace, base, None)
        if callable(fn):
            found.append((f"{prefix}.{base}", fn, calls.torch_style))
    found.append(
        (
            f"torch.ops.aten.{entry['aten']}",
            _aten_overload(entry["aten"]),
            calls.aten_style,
        )
    )
    return found


def _same(got, expected) -> bool:
    import torch

    if got.shape != expected.shape or got.dtype != expected.dtype:
        return False
    if got.dtype in (torch.bool,) or not got.is_floating_point():
        return bool(torch.equal(got, expected))
    tol = 1e-4 if got.dtype in (torch.float32, torch.float64) else 2e-2
    return bool(
        torch.allclose(
            got.float(), expected.float(), rtol=tol, atol=tol, equal_nan=True
        )
    )


class _Worker:
    """Hosts some roles; they share one set of argument tensors."""

    def __init__(self, roles: tuple[str, ...], params: dict):
        import torch

        torch.set_num_threads(params["threads"])
        self.roles = roles
        self.modules: dict[str, object] = {}
        for role in roles:
            if role in ("before", "after"):
                from ..runtime import load

                module = load(params[f"{role}_build_dir"])
                module.set_handle_reuse(role == "after")
                if role == "before" and hasattr(module, "set_direct_mode"):
                    # The path before any optimisation: through the dispatcher.
                    module.set_direct_mode(False)
                self.modules[role] = module
            elif role == "floor":
                from . import floor

                self.modules[role] = floor.load(Path(params["floor_path"]))
        self.loops: dict[str, object] = {}

    def state(self) -> dict:
        """The runtime switches of the hosted builds."""
        result = {}
        for role, m in self.modules.items():
            if role in ("before", "after"):
                result[role] = {"handle_reuse": bool(m.handle_reuse())}
                if hasattr(m, "direct_mode"):
                    result[role]["direct_mode"] = bool(m.direct_mode())
        return result

    def setup(self, config: cases.Config, entry: dict) -> dict:
        import torch

        self.loops = {}
        gc.collect()
        values = cases.materialise(config)
        func = _aten_overload(entry["functional"])
        result = calls.functional(func, entry, values)()
        expected = list(result) if isinstance(result, (tuple, list)) else [result]
        outputs = [torch.empty_like(r) for r in expected]
        info = {}
        for role in self.roles:
            for o in outputs:
                o.zero_()
            if role == "reference":
                call, label = self._reference(entry, values, outputs, expected)
            else:
                fn = getattr(self.modules[role], entry["name"], None)
                if fn is None:
                    raise LookupError(f"the {role} module has no op {entry['name']}")
                build = calls.floor if role == "floor" else calls.ours
                call = build(fn, entry, values, outputs)
                call()
                label = f"{role}.{entry['name']}"
            match = all(_same(o, e) for o, e in zip(outputs, expected))
            self.loops[role] = calls.timed_loop(call)
            info[role] = {"match": match, "call": label}
        return info

    def _reference(self, entry, values, outputs, expected):
        errors = []
        for label, fn, build in _reference_candidates(entry):
            call = build(fn, entry, values, outputs)
            try:
                call()
            except (TypeError, RuntimeError) as e:
                errors.append(f"{label}: {str(e).splitlines()[0]}")
                continue
            if all(_same(o, e) for o, e in zip(outputs, expected)):
                return call, label
            errors.append(f"{label}: result differs from the functional op")
        raise RuntimeError("no reference call works: " + "; ".join(errors))

    def time(self, role: str, n: int, warm: bool) -> int:
        """ns for n calls; warm: one untimed call first, so that the batch
        starts with this variant's data in cache whatever ran before it."""
        loop = self.loops[role]
        if warm:
            loop(1)
        return loop(n)

    def calibrate(self, role: str, target_ns: int) -> float:
        loop = self.loops[role]
        n = 1
        while True:
            ns = loop(n)
            if ns >= target_ns or n >= 1 << 22:
                return ns / n
            # Grow towards the target, at most tenfold a step.
            n = min(n * 10, max(n * 2, int(n * 1.2 * target_ns / max(ns, 1))))


def main(conn, roles: tuple[str, ...], params: dict) -> None:
    """Process entry point (multiprocessing spawn)."""
    gc.disable()  # collections only at setup, never inside a timed batch
    try:
        worker = _Worker(roles, params)
    except Exception as e:
        conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ok", worker.state()))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        kind = request[0]
        try:
            if kind == "setup":
                reply = ("ok", worker.setup(request[1], request[2]))
            elif kind == "calibrate":
                reply = ("ok", worker.calibrate(request[1], request[2]))
            elif kind == "time":
                reply = ("ok", worker.time(*request[1:]))
            elif kind == "close":
                conn.send(("ok", None))
                return
            else:
                reply = ("error", f"unknown request {kind!r}")
        except Exception as e:
            text = str(e).strip().splitlines()
            reply = ("error", f"{type(e).__name__}: {text[0] if text else ''}")
        conn.send(reply)
