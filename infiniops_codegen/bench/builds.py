"""The before and after builds the bench times: checked, built when missing.

Builds are made by `builder.build()`, in this process, as `infiniops-codegen
build` makes them; what a build directory holds is `builder.inspect()`'s
answer. The before build is the bench's own: it is (re)built when it lacks
ops (then with the union of what it has and what is needed, so a narrow run
never shrinks it), has another optimisation level, or is older than the
sources (an incremental build; when that fails, the existing module is used
with a warning). The after build is only built when it holds no module at
all (then with the default op set, as the runtime tests do); otherwise it is
used as it is, and configurations of ops it lacks are skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..toolchain import builder
from ..base.errors import SpecErrors
from ..model.manifest import ManifestError
from ..base import project as projects
from ..base.locations import PACKAGE_DIR
from ..model.resolve import SelectionError
from ..render.writer import ForeignFileError


class BuildFailed(Exception):
    pass


def inspect(build_dir: Path) -> builder.Built | None:
    """What the build directory holds; None when it holds no module or no
    readable manifest (then it is built)."""
    try:
        return builder.inspect(build_dir)
    except ManifestError:
        return None


def _build(build_dir: Path, opt_level: str, ops: list[str] | None, echo) -> None:
    what = f"{len(ops)} ops" if ops is not None else "the default op set"
    echo(f"building {build_dir} (-O{opt_level}, {what}); this takes minutes")
    request = builder.BuildRequest(
        build_dir=Path(build_dir),
        ops=",".join(sorted(ops)) if ops is not None else None,
        opt_level=opt_level,
        smoke=ops is None,
    )
    try:
        builder.build(request, echo=lambda line: echo(f"  {line}"))
    except (builder.BuildError, SpecErrors, SelectionError, ForeignFileError) as e:
        raise BuildFailed(f"building {build_dir} failed:\n{e}") from None
    except OSError as e:
        raise BuildFailed(f"building {build_dir} failed: {e}") from None


# The packages whose code makes a build (the bench's own, the harness's and the
# simulated accelerator's do not).
GENERATOR = (
    "base",
    "opspec",
    "schema",
    "model",
    "render",
    "toolchain",
    "runtime",
    "cli",
)


def _files(root: Path, *globs: str) -> list[Path]:
    return [p for g in globs for p in root.glob(g) if p.is_file()]


def _sources() -> list[Path]:
    """What a build is made from: the tool's generator, templates and support
    sources, and the project's specs and native kernels."""
    project = projects.current()
    return (
        _files(PACKAGE_DIR, "*.py", *(f"{stage}/*.py" for stage in GENERATOR))
        + _files(PACKAGE_DIR, "render/templates/*", "support/**/*")
        + _files(project.specs, "*.yaml")
        + _files(project.kernels, "**/*")
    )


def newest_source() -> float:
    """The latest modification time among what a build is made from."""
    return max((p.stat().st_mtime for p in _sources()), default=0.0)


def _module_inputs() -> list[Path]:
    """What the compiled module is made of (generated/ follows the specs and
    the templates; `build` regenerates it first): a module older than one of
    these is stale, and a no-op `build` after a change elsewhere leaves it as
    it is."""
    project = projects.current()
    return (
        _files(PACKAGE_DIR, "support/**/*")
        + _files(project.kernels, "**/*")
        + _files(project.generated, "**/*")
    )


def stale_inputs(module: Path) -> list[str]:
    """Module inputs modified after the module was built: relative to the
    project, or to the tool's package for its own files outside it."""
    built = module.stat().st_mtime
    project = projects.current()

    def shown(p: Path) -> str:
        return (
            str(p.relative_to(PACKAGE_DIR))
            if not p.is_relative_to(project.root)
            else project.rel(p)
        )

    return sorted(shown(p) for p in _module_inputs() if p.stat().st_mtime > built)


def ensure_before(
    build_dir: Path, opt_level: str, ops: set[str], echo
) -> builder.Built:
    info = inspect(build_dir)
    wanted = set(ops) | (set(info.ops) if info is not None else set())
    if info is not None and ops <= info.ops and info.opt_level == opt_level:
        if info.module.stat().st_mtime >= newest_source():
            return info
        echo(f"{build_dir} is older than the sources: updating it")
        try:
            _build(build_dir, opt_level, sorted(wanted), echo)
        except BuildFailed as e:
            echo(f"warning: {e}\nwarning: timing the existing {build_dir} module")
        return inspect(build_dir) or info
    _build(build_dir, opt_level, sorted(wanted), echo)
    info = inspect(build_dir)
    if info is None:
        raise BuildFailed(f"{build_dir} holds no module after building")
    return info


def ensure_after(build_dir: Path, echo) -> builder.Built:
    info = inspect(build_dir)
    if info is None:
        _build(build_dir, "3", None, echo)
        info = inspect(build_dir)
        if info is None:
            raise BuildFailed(f"{build_dir} holds no module after building")
    elif info.opt_level not in ("3", "?"):
        echo(f"note: {build_dir} was built at -O{info.opt_level}, not -O3")
    return info
