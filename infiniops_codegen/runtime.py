"""Importing the built module.

    from infiniops_codegen.runtime import load
    ops = load("build")          # the directory given to `build --build-dir`
    ops.add(x, y, out=z)

Or put the build directory on PYTHONPATH and `import infiniops`.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

# Standard library only: loading a build imports nothing of the generator
# (jinja2, torchgen), and not torch either (the module imports it itself).
from .locations import MODULE_NAME, find_module
from .project import ProjectError
from .project import current as current_project
from . import sanitize


def load(build_dir: str | os.PathLike | None = None):
    """Import the module built in build_dir (default: $INFINIOPS_BUILD_DIR or
    the build directory of the project at or above the working directory).
    Loading the same directory twice returns the same module object."""
    directory = build_dir or os.environ.get("INFINIOPS_BUILD_DIR")
    if not directory:
        try:
            directory = current_project().build_dir
        except ProjectError as e:
            raise ImportError(
                f"{e}; or pass the build directory: load('path/to/build')",
                name=MODULE_NAME,
            ) from None
    directory = Path(directory)
    path = find_module(directory)
    if path is None:
        raise ImportError(
            f"no built {MODULE_NAME} module in {directory}: run "
            f"'infiniops-codegen build --build-dir {directory}'",
            name=MODULE_NAME,
        )
    record = sanitize.read(directory)
    if record is not None and sanitize.missing_runtimes(record):
        # Loading it would abort the process ("ASan runtime does not come
        # first"), not raise.
        raise ImportError(
            f"{directory} is a sanitized build ({','.join(record['sanitizers'])}): "
            "it loads only into a Python that preloads the sanitizers' runtimes; "
            f"run {directory / sanitize.SCRIPT} (or: env "
            + " ".join(f"{k}={v}" for k, v in record["env"].items())
            + " python ...)",
            name=MODULE_NAME,
        )
    loaded = sys.modules.get(MODULE_NAME)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
            return loaded
        raise ImportError(
            f"{MODULE_NAME} is already loaded from {loaded.__file__}; an extension "
            "module can be loaded only once per process",
            name=MODULE_NAME,
        )
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[MODULE_NAME]
        raise
    return module
