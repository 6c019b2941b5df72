"""The modules that moved when the package was cut by stage (0.x: one folder
per stage, docs/architecture.md): their old import paths keep working, with a
DeprecationWarning, until the next release removes them (CHANGELOG.md lists
them from this table)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old top-level module -> where it is now (both under infiniops_codegen.)
MOVED = {
    "arg_kinds": "schema.arg_kinds",
    "bridge_cache": "build.bridge_cache",
    "builder": "build.builder",
    "composite_calls": "spec.composite_calls",
    "coverage": "model.coverage",
    "cuda_toolkit": "build.cuda_toolkit",
    "drift": "render.drift",
    "dtypes": "base.dtypes",
    "errors": "base.errors",
    "extensions": "spec.extensions",
    "kernel_sources": "model.kernel_sources",
    "link_errors": "build.link_errors",
    "locations": "base.locations",
    "manifest": "model.manifest",
    "model": "model.ops",
    "model_trace": "trace.marks",
    "module_api": "model.module_api",
    "observe": "runtime.observe",
    "overloads": "model.overloads",
    "pipeline": "render.pipeline",
    "platforms": "base.platforms",
    "project": "base.project",
    "python_signature": "render.python_signature",
    "references": "spec.references",
    "render": "render.sources",
    "resolve": "model.resolve",
    "sanitize": "base.sanitize",
    "scaffold": "scaffold.init",
    "schema_db": "schema.db",
    "schema_types": "schema.records",
    "specs": "spec.entries",
    "torch_build": "base.torch_build",
    "torch_library": "render.torch_library",
    "torch_ops": "runtime.torch_ops",
    "torch_release": "base.torch_release",
    "trace_recorder": "trace.recorder",
    "writer": "render.writer",
    "yaml_indentation": "base.yaml_indentation",
    "yaml_nodes": "base.yaml_nodes",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        # The moved module itself: patching or importing either name is the
        # same object.
        return importlib.import_module(self.new)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.partition(".")
        if package != __package__ or old not in MOVED or MOVED[old] == old:
            return None
        new = f"{package}.{MOVED[old]}"
        warnings.warn(
            f"{fullname} moved to {new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def forward(package: str, module: str):
    """The `__getattr__` of a package that has the name a module had
    (model.py is model/ops.py now): the old module's names, read through the
    package, with the same warning."""

    def __getattr__(name: str):
        # `from <package> import <submodule>` asks first: the import system
        # then imports it, without the old module's dependencies.
        if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}"):
            raise AttributeError(name)
        value = getattr(importlib.import_module(f"{package}.{module}"), name, _MISSING)
        if value is _MISSING:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        warnings.warn(
            f"{package}.{name} moved to {package}.{module}.{name}; the old path "
            "goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__


_MISSING = object()


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
