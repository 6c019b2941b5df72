"""The built module's ops inside PyTorch 2's compiler stack (docs/compile.md).

The C++ library registers each op with the dispatcher as
`torch.ops.<name>.<op>` (its out= and functional overloads, ATen's schemas,
kernels that call the library's dispatch). This module adds what only
Python has, and does it when first needed, so that `import <name>` costs
what it did:

- `torch.ops.<name>` registers the ops on its first lookup;
- fake (and meta) kernels: an ATen op's are its twin's, a composite's its
  reference expression, so shapes stay symbolic under `dynamic=True`;
- for TorchDynamo, each of the module's functions has a polyfill that calls
  its dispatcher op, so `torch.compile` traces `ops.add(x, y)` into the
  graph as `torch.ops.<name>.add` instead of breaking the graph on a C
  function. Installed when `torch._dynamo` is imported (by torch.compile or
  torch.export), or at once where it already is.

Eager calls never come here: they keep the module's own binding.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path

from ..base.locations import MANIFEST

_lock = threading.RLock()


class _Library:
    """One built module's registration state."""

    def __init__(self, module, directory: Path):
        self.module = module
        self.name = module.__name__
        self.directory = directory
        self.registered = False
        self.polyfilled = False
        self._manifest = None
        self._keep = (
            []
        )  # torch.library.Library objects: registrations live while they do

    @property
    def manifest(self) -> dict:
        if self._manifest is None:
            path = self.directory / MANIFEST
            self._manifest = json.loads(path.read_text(encoding="utf-8"))
        return self._manifest

    def ensure(self) -> None:
        """The ops in torch.ops.<name>, with their fake kernels; once."""
        with _lock:
            if self.registered:
                return
            self.module._register_torch_ops()
            self._register_fakes()
            self.registered = True

    def _register_fakes(self) -> None:
        import torch
        from torch._library import simple_registry

        lib = torch.library.Library(self.name, "FRAGMENT")
        self._keep.append(lib)
        source = f"{__name__} (the {self.name} build's fake kernels)"
        for op in self.manifest["ops"]:
            d = op["dispatcher"]
            for overload, fake in (
                (d["out"], _fake_out(op)),
                (d["functional"], _fake_functional(op)),
            ):
                if overload is None or fake is None:
                    continue
                base, _, name = overload.partition(".")
                qualname = f"{self.name}::{base}" + (
                    "" if name == "default" else f".{name}"
                )
                entry = simple_registry.singleton.find(qualname)
                if entry.fake_impl.kernel is None:
                    try:
                        entry.fake_impl.register(fake, source, lib)
                    except TypeError:  # torch releases before the `lib` parameter
                        entry.fake_impl.register(fake, source)

    def install_polyfills(self) -> None:
        """Dynamo polyfills for the module's functions; once, with
        torch._dynamo imported."""
        with _lock:
            if self.polyfilled:
                return
            self.polyfilled = True
            self.ensure()
            from torch.compiler import substitute_in_graph

            for name, target in self._functions().items():
                function = getattr(self.module, name, None)
                if function is None:
                    continue
                polyfill = _polyfill(self.name, name, *target)
                substitute_in_graph(function, skip_signature_check=True)(polyfill)

    def _functions(self) -> dict[str, tuple[str, dict[str, str], tuple[str, ...]]]:
        """Each function of the module -> (its dispatcher op's base name,
        Python keyword -> schema name, the out= argument's schema names)."""
        by_op = {}
        for op in self.manifest["ops"]:
            base = op["dispatcher"]["out"].partition(".")[0]
            renames = {
                a["python_name"]: a["name"]
                for a in op["arguments"]
                if a["python_name"] != a["name"] and a["role"] != "hidden"
            }
            outs = tuple(a["name"] for a in op["arguments"] if a["role"] == "output")
            by_op[op["name"]] = (base, renames, outs)
        functions = dict(by_op)
        for name, overloads in self.manifest["functions"].items():
            served = [by_op[o["op"]] for o in overloads if o["op"] in by_op]
            if not served:
                continue
            renames: dict[str, str] = {}
            for _, r, _ in served:
                renames.update(r)
            functions[name] = (served[0][0], renames, served[0][2])
        return functions


def _fake_out(op: dict):
    if not op["composite"]:
        return _aten_overload(op["aten"])
    reference = _reference(op)
    outs = [a["name"] for a in op["arguments"] if a["role"] == "output"]

    def fake(*args, **kwargs):
        result = reference(*args, **kwargs)
        results = result if isinstance(result, tuple) else (result,)
        written = [kwargs[name] for name in outs]
        for out, r in zip(written, results):
            torch_refs_resize(out, r)
        return written[0] if len(written) == 1 else tuple(written)

    return fake


def torch_refs_resize(out, result) -> None:
    """What the out= call does to `out` (fake tensors: its metadata)."""
    from torch._prims_common import is_same_shape

    if not is_same_shape(out.shape, result.shape):
        out.resize_(result.shape)


def _fake_functional(op: dict):
    d = op["dispatcher"]
    if d["functional"] is None:
        return None
    if not op["composite"]:
        return _aten_overload(d["aten_functional"])
    reference = _reference(op)

    def fake(*args, **kwargs):
        # The reference's geometry, the library's layout: its outputs are
        # allocated contiguous (like an input, or resized by the body).
        result = reference(*args, **kwargs)
        if isinstance(result, tuple):
            return tuple(r.new_empty(r.shape) for r in result)
        return result.new_empty(result.shape)

    return fake


def _aten_overload(name: str):
    """ATen's overload `name` ("add.out"), looked up when first called: its
    fake kernel is torch's own (symbolic shapes included)."""
    base, _, overload = name.partition(".")
    found = []

    def fake(*args, **kwargs):
        if not found:
            import torch

            packet = getattr(torch.ops.aten, base)
            found.append(getattr(packet, overload or "default"))
        return found[0](*args, **kwargs)

    return fake


def _reference(op: dict):
    """A composite's reference expression as a function of its schema's
    arguments (the functional overload's: no outputs)."""
    params = [a for a in op["arguments"] if a["role"] not in ("output", "hidden")]
    code = compile(op["reference"], f"<{op['name']} reference>", "eval")

    def reference(*args, **kwargs):
        import torch

        values = {}
        for k, a in enumerate(params):
            if k < len(args):
                values[a["name"]] = args[k]
            elif a["name"] in kwargs:
                values[a["name"]] = kwargs[a["name"]]
            else:
                values[a["name"]] = a["default"]
        return eval(code, {"torch": torch}, values)

    return reference


def _polyfill(namespace: str, name: str, base: str, renames: dict, outs: tuple):
    """What TorchDynamo traces in place of the module's function `name`: its
    dispatcher op (overload resolved as torch.ops resolves it), keywords
    renamed to the schema's, out= spread over the schema's outputs."""
    import torch

    packet = getattr(getattr(torch.ops, namespace), base)

    def polyfill(*args, **kwargs):
        implementation = kwargs.pop("implementation", "default")
        stream = kwargs.pop("stream", None)
        if implementation != "default" or stream is not None:
            raise NotImplementedError(
                f"{namespace}.{name}(): implementation= and stream= are eager-only; "
                "under torch.compile the op runs as torch.ops."
                f"{namespace}.{base} (the library's default choice)"
            )
        out = kwargs.pop("out", None)
        named = {renames.get(k, k): v for k, v in kwargs.items()}
        if out is not None:
            if isinstance(out, (tuple, list)):
                named.update(zip(outs, out))
            else:
                named[outs[0]] = out
        return packet(*args, **named)

    polyfill.__name__ = name
    polyfill.__qualname__ = f"{namespace}.{name}"
    return polyfill


class _DynamoHook:  # a meta path finder (not importlib.abc's: an import less)
    """Installs the polyfills once torch._dynamo has been imported."""

    def __init__(self):
        self.libraries: list[_Library] = []

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)  # once; and find_spec below must not find it
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterLoad(spec.loader, self._loaded)
        return spec

    def _loaded(self) -> None:
        import warnings

        for library in self.libraries:
            try:
                library.install_polyfills()
            except Exception as e:  # noqa: BLE001 - never fail torch._dynamo's import
                warnings.warn(
                    f"{library.name}: its ops were not made traceable by "
                    f"torch.compile ({type(e).__name__}: {e}); eager calls are "
                    "unaffected",
                    RuntimeWarning,
                    stacklevel=2,
                )


class _AfterLoad:  # a loader that runs `then` after the module's own
    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then()


_hook: _DynamoHook | None = None
_libraries: dict[str, _Library] = {}


def install(module, directory: Path) -> None:
    """Called by runtime.load after the module is loaded: cheap, imports
    nothing that `import torch` did not."""
    global _hook
    import torch

    library = _Library(module, Path(directory))
    _libraries[library.name] = library

    class Namespace(torch._ops._OpNamespace):
        # The ops' __module__ derives from it: torch's pickling of graphs
        # finds them by torch's own ("torch._ops.<name>").
        __module__ = torch._ops._OpNamespace.__module__

        def __getattr__(self, op_name):
            if op_name.startswith("__"):
                return super().__getattr__(op_name)
            library.ensure()
            return super().__getattr__(op_name)

    setattr(torch.ops, library.name, Namespace(library.name))
    if "torch._dynamo" in sys.modules:
        library.install_polyfills()
        return
    with _lock:
        if _hook is None or _hook not in sys.meta_path:
            _hook = _DynamoHook()
            sys.meta_path.insert(0, _hook)
        _hook.libraries.append(library)


def library(name: str) -> _Library:
    """The registration state of the loaded module `name`."""
    return _libraries[name]
