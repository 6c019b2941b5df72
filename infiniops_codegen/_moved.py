"""The modules that moved when the package was cut by stage (0.x: one folder
per stage, docs/architecture.md), and the two stage packages renamed after
(`build/` is `toolchain/`, `spec/` is `opspec/`): their old import paths keep
working, with a DeprecationWarning, until the next release removes them
(docs/changelog.md lists them from this table)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old module -> where it is now (both under infiniops_codegen.): a top-level
# module of before the cut by stage, or a module of a renamed stage package
# (dotted, and the package itself).
MOVED = {
    "arg_kinds": "schema.arg_kinds",
    "bridge_cache": "toolchain.bridge_cache",
    "build": "toolchain",
    "build.bridge_cache": "toolchain.bridge_cache",
    "build.builder": "toolchain.builder",
    "build.cuda_toolkit": "toolchain.cuda_toolkit",
    "build.link_errors": "toolchain.link_errors",
    "build.wheel": "toolchain.wheel",
    "builder": "toolchain.builder",
    "composite_calls": "opspec.composite_calls",
    "coverage": "model.coverage",
    "cuda_toolkit": "toolchain.cuda_toolkit",
    "drift": "render.drift",
    "dtypes": "base.dtypes",
    "errors": "base.errors",
    "extensions": "opspec.extensions",
    "kernel_sources": "model.kernel_sources",
    "link_errors": "toolchain.link_errors",
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
    "references": "opspec.references",
    "render": "render.sources",
    "resolve": "model.resolve",
    "sanitize": "base.sanitize",
    "scaffold": "scaffold.init",
    "schema_db": "schema.db",
    "schema_types": "schema.records",
    "spec": "opspec",
    "spec.composite_calls": "opspec.composite_calls",
    "spec.entries": "opspec.entries",
    "spec.extensions": "opspec.extensions",
    "spec.references": "opspec.references",
    "specs": "opspec.entries",
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
        self.spec = None

    def create_module(self, spec):
        # The moved module itself: patching or importing either name is the
        # same object.
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the old name's spec on it: the module keeps
        # its own (importlib.resources, reload and find_spec read it).
        module.__spec__ = self.spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.partition(".")
        if package != __package__ or old not in MOVED:
            return None
        if MOVED[old].startswith(f"{old}."):
            # A package has the old module's name now (model.py is
            # model/ops.py): that package is what the name imports.
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
    # First: `infiniops_codegen.build` is the toolchain package, whose
    # __path__ is toolchain/, so the path finder would find build.builder there
    # too and load builder.py a second time, under the old name.
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
