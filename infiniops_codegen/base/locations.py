"""Where the tool's own files are, the built module's name and its files in
a build directory. No imports beyond the standard library, so that
`runtime.load()` and the tools reading a build need nothing of the generator
(jinja2, torchgen). The user's directories are the project's (project.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
# Shipped with the tool (package data), the same for every project: the
# CMake project, the core, runtime and torch bridge sources, the kernels'
# helper headers.
SUPPORT_DIR = PACKAGE_DIR / "support"
# The generator's templates, and those of the files `init` writes.
TEMPLATE_DIR = PACKAGE_DIR / "render" / "templates"
INIT_TEMPLATE_DIR = PACKAGE_DIR / "scaffold" / "templates"
# The tool's tables (platforms, dtypes) and sanitizer suppressions.
DATA_DIR = PACKAGE_DIR / "data"
# The tool's documentation (the repository's docs/, shipped as package data:
# `infiniops-codegen docs`).
DOCS_DIR = PACKAGE_DIR / "docs"

# The built Python module of a build whose manifest names none (a build
# before libraries had their own names); project.LibraryNames names it now.
MODULE_NAME = "infiniops"
MANIFEST = "manifest.json"  # in a generated directory and in a build directory
# In a build directory: the torch build its module is linked against, written
# when the module is linked (support/cmake/InfiniOpsTorch.cmake) and read
# before it is loaded (runtime/loader.py).
TORCH_RECORD = "torch-build.json"
# In a build directory: the Python modules of its platforms' torch ports
# (platforms.yaml torch.module) and where each one's CMake package was, which
# runtime.load() imports and checks before the module (written at configure
# by builder.configure).
PORTS_RECORD = "torch-ports.json"
# In an installed package (a wheel, docs/packaging.md), beside its module:
# the distribution and version it was installed as, {"distribution": ...,
# "version": ...}; a build directory has none.
WHEEL_RECORD = "wheel.json"
# In a sanitized build directory (sanitize.py): how to run Python under it.
SANITIZE_RECORD = "sanitize.json"
# Also there: the builder's record of how it configured the directory, and of
# the command that rebuilds it (builder.configure).
CONFIGURE_STAMP = ".infiniops-configure.json"


# The tool's own cache (schemas, bridge objects, the simulated accelerator):
# $INFINIOPS_CODEGEN_CACHE, else under $XDG_CACHE_HOME or ~/.cache.
def cache_dir() -> Path:
    env = os.environ.get("INFINIOPS_CODEGEN_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(base) / "infiniops-codegen"


def shown(path: Path) -> str:
    """path as the user would type it: relative to the working directory
    when inside it, else as given."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def module_name(build_dir: Path) -> str:
    """The name of the module built in build_dir: the library's name its
    manifest records (project.LibraryNames)."""
    import json  # only here: `import <module>` reaches this through runtime.load

    try:
        text = (Path(build_dir) / MANIFEST).read_text(encoding="utf-8")
        # Only the record decoded, not the whole manifest (its ops): this
        # runs on every `import <module>`.
        start = text.index("{", text.index('"library":'))
        name = json.JSONDecoder().raw_decode(text, start)[0]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return MODULE_NAME
    return name if isinstance(name, str) and name.isidentifier() else MODULE_NAME


def find_module(build_dir: Path) -> Path | None:
    """The built module in build_dir, None when there is none."""
    build_dir = Path(build_dir)
    name = module_name(build_dir)
    found = sorted(build_dir.glob(f"{name}.*.so")) + sorted(
        build_dir.glob(f"{name}.*.pyd")
    )
    return found[0] if found else None


def cmake_cache(build_dir: Path) -> dict[str, str]:
    """NAME -> value of the CMakeCache.txt entries (`NAME:TYPE=value`)."""
    try:
        text = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_][\w.-]*):[A-Z]+=(.*)$", line)
        if m:
            values[m.group(1)] = m.group(2)
    return values
