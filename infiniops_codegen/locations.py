"""Where things are: the repository's directories, the built module's name
and its files in a build directory. No imports beyond the standard library,
so that `runtime.load()` and the tools reading a build need nothing of the
generator (jinja2, torchgen)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPECS = REPO_ROOT / "op_specs"
DEFAULT_OUT = REPO_ROOT / "generated"  # the default op set (committed)
DEFAULT_BUILD_DIR = REPO_ROOT / "build"
TEMPLATE_DIR = REPO_ROOT / "templates"

MODULE_NAME = "infiniops"  # the built Python module
MANIFEST = "manifest.json"  # in a generated directory and in a build directory


def find_module(build_dir: Path) -> Path | None:
    """The built module in build_dir, None when there is none."""
    build_dir = Path(build_dir)
    found = sorted(build_dir.glob(f"{MODULE_NAME}.*.so")) + sorted(
        build_dir.glob(f"{MODULE_NAME}.*.pyd")
    )
    return found[0] if found else None
