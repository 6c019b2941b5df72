"""A timing worker process, driven over a pipe by runner.py.

A process hosts some variants, which then share the argument and output
tensors (same memory, same pages: a fair comparison for memory-bound ops).
The before and after builds must live in different processes: both modules
have the project's name, and an extension module loads once per process.

Variants (roles):
  reference          torch.<op>(..., out=) from Python (torch.ops.aten.<overload>
                     when there is no such function; a composite's reference
                     expression plus out.copy_())
  before             the before build: from_blob path, dispatcher, no native
                     kernel (paths.before_setting)
  <path>             the after build forced onto a path (paths.setting): native,
                     direct, dispatcher, from_blob; the switches are set before
                     each batch (they are process-wide)
  floor_<path>       that path's floor (floor.py)
  torch_api          torch.<function>(...) without out= (torch's own call that
                     allocates its outputs), where torch has the function
  api                m.<function>(...) without out= (ours: the outputs
                     allocated as torch allocates them, model/overloads.py)
  api_out            m.<function>(..., out=): the overloaded function, which
                     resolves the call to this op's binding (compare with the
                     default path: the explicit overload's call)

Requests (tuples) and their replies ("ok", value) or ("error", text):
  (start)                               -> {"before"|"after": module switches}
  ("setup", config, op, paths, default)   op: the manifest.Op
                                        -> {role: {"match": bool, "call": str}}
  ("calibrate", role, target_ns)        -> estimated ns per call
  ("time", role, n, warm)               -> ns taken by n calls (after one
                                           untimed call when warm)
  ("close",)
"""

from __future__ import annotations

import gc
from pathlib import Path

from ..model.manifest import Op
from . import calls, cases, reference
from . import floor as floor_ext
from . import paths as P

# Which process hosts which kind of variant.
MAIN, BEFORE = "main", "before"
PROCESSES = (MAIN, BEFORE)


def floor_role(path: str) -> str:
    return f"floor_{path}"


class _Worker:
    """Hosts some variants; they share one set of argument tensors."""

    def __init__(self, kind: str, params: dict):
        import torch

        from ..base.platforms import import_torch_module

        torch.set_num_threads(params["threads"])
        self.kind = kind
        self.device = params.get("device", "cpu")
        import_torch_module(self.device)
        # Off the CPU a batch ends when the device is done with it.
        self.sync = None if self.device == "cpu" else self._synchronize
        self.floor = None
        if kind == BEFORE:
            from ..runtime import load

            self.module = load(params["before_build_dir"])
            self.module.set_handle_reuse(False)
            if hasattr(self.module, "set_direct_mode"):
                self.module.set_direct_mode(False)
        else:
            from ..runtime import load

            self.module = load(params["after_build_dir"])
            self.floor = floor_ext.load(Path(params["floor_path"]))
            from ..model.manifest import of_build

            self.functions = of_build(params["after_build_dir"]).functions
        self.loops: dict[str, object] = {}
        self.settings: dict[str, P.Setting] = {}
        if kind == BEFORE:
            self.functions = {}

    def _synchronize(self) -> None:
        import torch

        torch.accelerator.synchronize()

    def state(self) -> dict:
        """The runtime switches of the hosted build, as it starts."""
        m = self.module
        state = {"handle_reuse": bool(m.handle_reuse())}
        if hasattr(m, "direct_mode"):
            state["direct_mode"] = bool(m.direct_mode())
        return {"before" if self.kind == BEFORE else "after": state}

    def _apply(self, role: str) -> None:
        s = self.settings.get(role)
        if s is not None and self.kind == MAIN:
            self.module.set_handle_reuse(s.handle_reuse)
            self.module.set_direct_mode(s.direct_mode)

    def _variants(self, op: Op, config, paths, default):
        """role -> (Call builder, label, Setting or None)."""
        name = op.name
        fn = getattr(self.module, name, None)
        if fn is None:
            raise LookupError(f"the {self.kind} build has no op {name}")
        result = {}
        if self.kind == BEFORE:
            s = P.before_setting(op, config.dtype, self.device)
            result["before"] = (fn, s)
            return result
        for path in paths:
            result[path] = (fn, P.setting(path, default))
            floor_fn = getattr(self.floor, floor_ext.function_name(path, name), None)
            if floor_fn is not None and P.has_floor(path, self.device):
                result[floor_role(path)] = (floor_fn, None)
        return result

    def _api(self, op: Op):
        """(the module function serving op, whether that signature takes
        out=, torch's function of the name or None); None: no function."""
        import torch

        for name, overloads in self.functions.items():
            for o in overloads:
                if o.op == op.name:
                    theirs = getattr(torch, name, None)
                    for ns in ("_nn", "_linalg", "_special", "_fft"):
                        theirs = theirs or getattr(getattr(torch._C, ns), name, None)
                    if op.composite:
                        theirs = None  # torch has no such function
                    # torch's signature takes out= where it pairs this op's
                    # overload (not where it serves its functional alone)
                    return getattr(self.module, name), o.aten == op.aten, theirs
        return None

    def _api_calls(self, op: Op, values: dict, outputs: list, want, restore, info):
        """The torch-API roles (api, api_out, torch_api) of a MAIN worker."""
        api = self._api(op) if self.kind == MAIN and self.functions else None
        if api is None:
            return
        fn, with_out, theirs = api
        new = []
        if op.out_optional:
            new.append(
                ("api", calls.ours_new(fn, op, values), f"after.{fn.__name__}(no out=)")
            )
            if theirs is not None:
                label = f"torch.{theirs.__name__}(no out=)"
                new.append(("torch_api", calls.functional(theirs, op, values), label))
        if with_out:
            call = calls.ours(fn, op, values, outputs)
            new.append(("api_out", call, f"after.{fn.__name__}(out=)"))
        for role, call, label in new:
            # a plain call: the default switches (handles, direct mode)
            self.settings[role] = P.Setting(role, True, True, None)
            returned = role != "api_out"  # the outputs come back, not in `outputs`
            self._add(role, label, call, outputs, want, restore, info, returned)

    def _add(self, role, label, call, outputs, want, restore, info, returned=False):
        """Makes the first call of a variant (its outputs checked against
        PyTorch's: those written, or those returned) and keeps its loop."""
        import torch

        for o in outputs:
            reference.sentinel_fill(o)
        restore()
        self._apply(role)
        try:
            result = call()
        except Exception as e:
            text = str(e).strip().splitlines()
            raise RuntimeError(
                f"{role} ({label}): {type(e).__name__}: {text[0] if text else ''}"
            ) from None
        got = outputs
        if returned:
            got = [result] if isinstance(result, torch.Tensor) else list(result)
        match = all(reference.same(o, w) for o, w in zip(got, want))
        self.loops[role] = calls.timed_loop(call, self.sync)
        info[role] = {"match": match, "call": label}

    def setup(self, config: cases.Config, op: Op, paths, default) -> dict:
        import torch

        self.loops, self.settings = {}, {}
        gc.collect()
        values = cases.materialise(config, self.device)
        mutable = op.mutable_inputs
        saved = {k: values[k].clone() for k in mutable if k in values}

        def restore():
            for k, v in saved.items():
                values[k].copy_(v)
            reference.reseed(op)

        want = reference.expected(op, values)
        outputs = [torch.empty_like(w) for w in want]
        info = {}
        if self.kind == MAIN:
            call, label = reference.reference_call(op, values, outputs, want, restore)
            self.loops["reference"] = calls.timed_loop(call, self.sync)
            info["reference"] = {"match": True, "call": label}
        for role, (fn, setting) in self._variants(op, config, paths, default).items():
            if setting is None:
                call = calls.floor(fn, op, values, outputs)
                label = f"floor.{fn.__name__}"
            else:
                call = calls.ours(fn, op, values, outputs, setting.implementation)
                build = "before" if self.kind == BEFORE else "after"
                label = f"{build}.{op.name} ({setting.describe()})"
                self.settings[role] = setting
            self._add(role, label, call, outputs, want, restore, info)
        self._api_calls(op, values, outputs, want, restore, info)
        return info

    def time(self, role: str, n: int, warm: bool) -> int:
        """ns for n calls; warm: one untimed call first, so that the batch
        starts with this variant's data in cache whatever ran before it."""
        self._apply(role)
        loop = self.loops[role]
        if warm:
            loop(1)
        return loop(n)

    def calibrate(self, role: str, target_ns: int) -> float:
        self._apply(role)
        loop = self.loops[role]
        n = 1
        while True:
            ns = loop(n)
            if ns >= target_ns or n >= 1 << 22:
                return ns / n
            # Grow towards the target, at most tenfold a step.
            n = min(n * 10, max(n * 2, int(n * 1.2 * target_ns / max(ns, 1))))


def main(conn, kind: str, params: dict) -> None:
    """Process op point (multiprocessing spawn)."""
    gc.disable()  # collections only at setup, never inside a timed batch
    try:
        worker = _Worker(kind, params)
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
                reply = ("ok", worker.setup(*request[1:]))
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
