"""Importing the built module.

    from infiniops_codegen.runtime import load
    ops = load("build")          # the directory given to `build --build-dir`
    ops.add(x, y, out=z)

Or put the build directory on PYTHONPATH and `import <name>` (the library's
name, project.LibraryNames; the build's package <name>/ calls load()).

An installed package of the library (its wheel, docs/packaging.md) holds a
copy of this module and of those it imports (`<name>/_runtime/`): there the
directory is the package's own, and nothing of the tool is imported.

A module built against one torch build loads into no other: load() compares
the build's record of its torch (locations.TORCH_RECORD) with the installed
one and raises ImportError naming both before the module is loaded, that is,
before the dynamic loader resolves any of torch's symbols
(docs/torch-releases.md).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

# Standard library only: loading a build imports nothing of the generator
# (jinja2, torchgen), and not torch either (the module imports it itself).
from ..base.locations import CONFIGURE_STAMP, MODULE_NAME, PORTS_RECORD, SANITIZE_RECORD
from ..base.locations import TORCH_RECORD, WHEEL_RECORD
from ..base.locations import find_module, module_name, shown
from ..base import torch_build


def load(build_dir: str | os.PathLike | None = None):
    """Import the module built in build_dir (default: $INFINIOPS_BUILD_DIR or
    the build directory of the project at or above the working directory).
    Loading the same directory twice returns the same module object."""
    directory = build_dir or os.environ.get("INFINIOPS_BUILD_DIR")
    if not directory:
        from ..base.project import ProjectError
        from ..base.project import current as current_project

        try:
            directory = current_project().build_dir
        except ProjectError as e:
            raise ImportError(
                f"{e}; or pass the build directory: load('path/to/build')",
                name=MODULE_NAME,
            ) from None
    directory = Path(directory)
    name = module_name(directory)
    path = find_module(directory)
    if path is None:
        raise ImportError(
            f"no built {name} module in {directory}: run "
            f"'infiniops-codegen build --build-dir {directory}'",
            name=name,
        )
    # Imported only for a sanitized build: `import <name>` runs this.
    sanitize = None
    if (directory / SANITIZE_RECORD).is_file():
        from ..base import sanitize
    record = sanitize.read(directory) if sanitize else None
    if record is not None and sanitize.missing_runtimes(record):
        # Loading it would abort the process ("ASan runtime does not come
        # first"), not raise.
        raise ImportError(
            f"{directory} is a sanitized build ({','.join(record['sanitizers'])}): "
            "it loads only into a Python that preloads the sanitizers' runtimes; "
            f"run {directory / sanitize.SCRIPT} (or: env "
            + " ".join(f"{k}={v}" for k, v in record["env"].items())
            + " python ...)",
            name=name,
        )
    wheel = _wheel_record(directory)
    _check_torch(directory, name, wheel)
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
            return loaded
        raise ImportError(
            f"{name} is already loaded from {loaded.__file__}; an extension "
            "module can be loaded only once per process",
            name=name,
        )
    _import_ports(directory, name)
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    # torch.ops.<name>, torch.compile and fake tensors (docs/compile.md):
    # registered when first needed, nothing at load.
    from . import observe, torch_ops

    torch_ops.install(module, directory)
    # ops.stats(), ops.trace(), ... (docs/observability.md)
    observe.install(module)
    # find_package(<K>) of an installed package: CMAKE_PREFIX_PATH (as
    # torch.utils.cmake_prefix_path); a build directory installs nothing.
    module.cmake_prefix_path = str(directory) if wheel is not None else None
    return module


def _wheel_record(directory: Path) -> dict | None:
    """The installed package's record (locations.WHEEL_RECORD), None for a
    build directory."""
    try:
        record = json.loads((directory / WHEEL_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _import_ports(directory: Path, name: str) -> None:
    """Import the torch ports of the build's platforms (the simulated
    accelerator's infiniops_codegen.sim, a vendor's torch_npu, ...): their
    device must be known to torch before the module's library, which links
    the port, registers with it. ImportError when a port's package is not
    the one the module was linked against (the simulated accelerator rebuilt
    since, for other sources or another torch): two builds of one backend
    must not meet in a process."""
    try:
        ports = json.loads((directory / PORTS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # a build without ports
    for port in ports:
        module = importlib.import_module(port["module"])
        built = port.get("cmake_prefix_path") or ""
        now = getattr(module, "cmake_prefix_path", "") or ""
        if built and now and os.path.realpath(built) != os.path.realpath(now):
            raise ImportError(
                f"the {name} module in {directory} was linked against "
                f"{port['module']} built in {built}, but {port['module']} is now "
                f"{now} (its sources or torch changed): rebuild it: "
                f"{rebuild_command(directory)}",
                name=name,
            )


def _check_torch(
    directory: Path, name: str = MODULE_NAME, wheel: dict | None = None
) -> None:
    """ImportError when the build's module was linked against another torch
    build than the installed one (a build without a record predates it)."""
    remedy = _reinstall(wheel) if wheel is not None else None
    try:
        built = torch_build.read_record(directory / TORCH_RECORD)
    except ValueError as e:
        raise ImportError(
            f"{e}; " + (remedy or f"rebuild it: {rebuild_command(directory)}"),
            name=name,
        ) from None
    if built is None:
        return
    installed = torch_build.installed()
    if installed == built:
        return
    found = f"torch {installed}" if installed else "no torch"
    what = (
        f"the {name} module in {directory}"
        if wheel is None
        else f"{wheel.get('distribution') or name} {wheel.get('version') or ''}".rstrip()
        + f" ({directory})"
    )
    raise ImportError(
        f"{what} was built against torch {built}, "
        f"but {found} is installed ({sys.executable}): a module built against one "
        "torch build loads into no other. "
        + (remedy or f"Rebuild it with this torch: {rebuild_command(directory)}"),
        name=name,
    )


def _reinstall(wheel: dict) -> str:
    """What to do when an installed package meets another torch."""
    dist = wheel.get("distribution") or "the package"
    return (
        f"Install the torch it was built against, or build {dist} against this "
        f"torch: pip install --no-build-isolation --no-binary {dist} "
        f"--force-reinstall --no-deps {dist} (or from its source directory: pip "
        "install --no-build-isolation .)"
    )


def rebuild_command(directory: Path) -> str:
    """The command that builds `directory` again as it was built (the options
    the builder recorded), runnable from the working directory."""
    import shlex  # only when refusing: `import <name>` runs this module

    try:
        stamp = json.loads((directory / CONFIGURE_STAMP).read_text(encoding="utf-8"))
        rebuild = stamp["rebuild"]
        root, options = Path(rebuild["project"]), list(rebuild["options"])
    except (OSError, ValueError, KeyError, TypeError):
        root, options = None, []
    words = ["infiniops-codegen"]
    cwd = Path.cwd().resolve()
    if root is not None and root != cwd and root not in cwd.parents:
        words += ["--project", str(root)]
    words += ["build", "--build-dir", shown(directory), *options]
    return " ".join(shlex.quote(w) for w in words)
