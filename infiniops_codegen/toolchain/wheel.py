"""The build backend of a project's wheel (PEP 517): `pip install .`,
`pip wheel .` and `python -m build` on a project of the tool
(docs/packaging.md).

    [build-system]
    requires = ["infiniops-codegen==0.9.0", "torch==2.13.0"]
    build-backend = "infiniops_codegen.build_backend"

Each hook checks the build options (config settings, in the seed's spelling:
`cmake.define.WITH_<PLATFORM>=ON|OFF`,
`cmake.define.INFINI_OPS_TORCH_OPT_LEVEL=0|1|2|3|s`,
`cmake.define.INFINI_OPS_OPS=<ops>`, `cmake.build-type=<type>`), adds what
scikit-build-core needs to build the tool's CMake project for this project
(`cmake.source-dir`: the tool's support/, a path no static pyproject can
name inside an isolated build environment; `wheel.install-dir`: the
package's directory; a persistent `build-dir`), and hands over to
scikit_build_core.build. The CMake project generates the sources at
configure (`python -m infiniops_codegen.build_backend generate`, below), so
that an editable install's rebuild sees an edited spec.

The module is also the dynamic-metadata provider `infiniops-codegen` (an
entry point): the wheel's Requires-Dist pins the torch release it was built
against, beside the project's own range.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base import project as projects
from ..base.locations import SUPPORT_DIR

OPT_LEVELS = ("0", "1", "2", "3", "s")
BUILD_TYPES = ("Release", "Debug", "RelWithDebInfo", "MinSizeRel")
_BOOLEANS = ("ON", "OFF", "TRUE", "FALSE", "YES", "NO", "1", "0")
PROVIDER = "infiniops-codegen"  # the dynamic-metadata entry point's name
# Settings the backend gives scikit-build-core: a project's may not.
_OWN_SETTINGS = {
    "cmake.source-dir": "the tool's CMake project",
    "wheel.install-dir": "the package's directory, the library's name",
}
# CMake variables the backend (or the CMake project in its place) sets.
_OWN_DEFINES = (
    "INFINI_OPS_PROJECT_DIR",
    "INFINI_OPS_WHEEL",
    "INFINI_OPS_GENERATED_DIR",
    "INFINI_OPS_KERNEL_ROOT",
    "INFINI_OPS_EXTENSION_KERNEL_ROOTS",
    "INFINI_OPS_PORT_PREFIX_PATH",
    "INFINI_OPS_BRIDGE_ENTRY",
)
# Build options of the tool's CMake project a wheel does not take, and why.
_NOT_FOR_WHEELS = {
    "INFINI_OPS_SANITIZE": "a sanitized module loads only into a Python that "
    "preloads the sanitizers' runtimes: 'infiniops-codegen build --sanitize'",
    "INFINI_OPS_COMPILE_ONLY": "a wheel needs the module: "
    "'infiniops-codegen build --compile-only' compiles without linking",
}


class BackendError(Exception):
    """A project or build option the backend cannot build; one line."""


def _fail(message: str):
    """The backend's errors: one line on stderr, exit status 1 (a traceback
    would bury it in pip's output)."""
    print(f"infiniops-codegen: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def _one(key: str, value) -> str:
    if isinstance(value, list):
        if len(set(value)) != 1:
            raise BackendError(f"{key} is given {len(value)} times: give it once")
        value = value[0]
    return str(value)


def check_options(config_settings: dict | None, platforms=None) -> dict[str, str]:
    """The config settings' CMake defines as NAME -> value, checked:
    BackendError naming the setting and the valid values otherwise.
    platforms: the names of the project's platforms (the tool's table and
    its own)."""
    if platforms is None:
        from ..base.platforms import platform_names

        platforms = platform_names()
    flags = {f"WITH_{p.upper()}": p for p in platforms}
    compilers = {f"INFINI_OPS_{p.upper()}_COMPILER" for p in platforms}
    settings = dict(config_settings or {})
    for key in _OWN_SETTINGS:
        if key in settings:
            raise BackendError(
                f"{key} is set by the backend ({_OWN_SETTINGS[key]}): leave it out"
            )
    if "cmake.build-type" in settings:
        kind = _one("cmake.build-type", settings["cmake.build-type"])
        if kind not in BUILD_TYPES:
            raise BackendError(
                f"cmake.build-type={kind}: use one of {', '.join(BUILD_TYPES)}"
            )
    defines = {}
    for key, value in settings.items():
        if not key.startswith("cmake.define."):
            continue
        name, value = key[len("cmake.define.") :], _one(key, value)
        if name in flags or (name.startswith("WITH_") and name.isupper()):
            if name not in flags:
                raise BackendError(
                    f"{key}: no platform {name[5:].lower()!r}; the platforms: "
                    + ", ".join(sorted(flags))
                )
            if value.upper() not in _BOOLEANS:
                raise BackendError(f"{key}={value}: use ON or OFF")
        elif name == "INFINI_OPS_TORCH_OPT_LEVEL":
            if value not in OPT_LEVELS:
                raise BackendError(f"{key}={value}: use one of {', '.join(OPT_LEVELS)}")
        elif name == "INFINI_OPS_OPS":
            if not value.strip():
                raise BackendError(
                    f"{key} is empty: name ops (add,mul), 'all' or 'default'"
                )
        elif name == "INFINI_OPS_PCH":
            if value.upper() not in _BOOLEANS:
                raise BackendError(f"{key}={value}: use ON or OFF")
        elif name in _OWN_DEFINES:
            raise BackendError(f"{key} is set by the backend: leave it out")
        elif name in _NOT_FOR_WHEELS:
            raise BackendError(f"{key}: not for a wheel ({_NOT_FOR_WHEELS[name]})")
        elif name.startswith("INFINI_OPS_") and name not in compilers:
            valid = [
                "INFINI_OPS_TORCH_OPT_LEVEL",
                "INFINI_OPS_OPS",
                "INFINI_OPS_PCH",
                *sorted(compilers),
                *sorted(flags),
            ]
            raise BackendError(
                f"{key}: no such build option; the tool's: " + ", ".join(valid)
            )
        defines[name] = value
    return defines


def _pyproject(root: Path) -> dict:
    from ..base.project import tomllib

    try:
        with open(root / "pyproject.toml", "rb") as f:
            return tomllib.load(f)
    except (OSError, ValueError) as e:
        raise BackendError(f"{root / 'pyproject.toml'}: {e}") from None


def check_pyproject(root: Path) -> None:
    """The project's pyproject.toml declares a package whose dependencies
    the provider completes: BackendError saying what to add otherwise."""
    data = _pyproject(root)
    where = root / "pyproject.toml"
    table = data.get("project")
    if not isinstance(table, dict) or "name" not in table:
        raise BackendError(
            f"{where}: no [project] table with a name: a wheel needs one "
            "(docs/packaging.md; 'infiniops-codegen init' writes it)"
        )
    entries = data.get("tool", {}).get("dynamic-metadata", [])
    ours = isinstance(entries, list) and any(
        isinstance(e, dict) and e.get("provider") == PROVIDER for e in entries
    )
    if "dependencies" not in table.get("dynamic", []) or not ours:
        raise BackendError(
            f"{where}: the wheel pins the torch it is built against: add "
            '"dependencies" to [project] dynamic and a [[tool.dynamic-metadata]] '
            f'table with provider = "{PROVIDER}" (docs/packaging.md)'
        )


def _project() -> projects.Project:
    root = Path.cwd()
    try:
        project = projects.load(root)
    except projects.ProjectError as e:
        raise BackendError(str(e)) from None
    projects.use(project)
    return project


def scikit_settings(config_settings: dict | None) -> dict:
    """The config settings scikit-build-core gets: the user's, checked, and
    the backend's (module docstring)."""
    project = _project()
    check_pyproject(project.root)
    check_options(config_settings)
    settings = dict(config_settings or {})
    settings["cmake.source-dir"] = str(SUPPORT_DIR)
    settings["wheel.install-dir"] = project.names.name
    # Persistent, under the project's build directory: a second wheel
    # rebuilds only what changed, and an editable install can rebuild.
    settings.setdefault(
        "build-dir", f"{project.rel(project.build_dir)}/wheel/{{wheel_tag}}"
    )
    settings["cmake.define.INFINI_OPS_PROJECT_DIR"] = str(project.root)
    settings["cmake.define.INFINI_OPS_WHEEL"] = "ON"
    return settings


def _hand_over(hook: str, *args, config_settings=None, after=()):
    """scikit_build_core.build's hook, with the backend's settings:
    hook(*args, settings, *after)."""
    try:
        settings = scikit_settings(config_settings)
    except BackendError as e:
        _fail(str(e))
    from scikit_build_core import build as scikit

    return getattr(scikit, hook)(*args, settings, *after)


# --- PEP 517 / PEP 660 hooks --------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return _hand_over("get_requires_for_build_wheel", config_settings=config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _hand_over(
        "get_requires_for_build_editable", config_settings=config_settings
    )


def get_requires_for_build_sdist(config_settings=None):
    return _hand_over("get_requires_for_build_sdist", config_settings=config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _hand_over(
        "prepare_metadata_for_build_wheel",
        metadata_directory,
        config_settings=config_settings,
    )


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _hand_over(
        "prepare_metadata_for_build_editable",
        metadata_directory,
        config_settings=config_settings,
    )


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _hand_over(
        "build_wheel",
        wheel_directory,
        config_settings=config_settings,
        after=(metadata_directory,),
    )


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _hand_over(
        "build_editable",
        wheel_directory,
        config_settings=config_settings,
        after=(metadata_directory,),
    )


def build_sdist(sdist_directory, config_settings=None):
    return _hand_over("build_sdist", sdist_directory, config_settings=config_settings)


# --- The dynamic-metadata provider (dynamic-metadata 0.3) ----------------------------


def dynamic_metadata(settings, project):
    """[project] dependencies += torch==<the release built against>: a module
    built against one torch loads into no other. The build's local part
    (+cpu, +cu130) cannot be pinned (== matches both): the loader refuses the
    other build at import (docs/packaging.md)."""
    from ..base import torch_build

    if settings:
        _fail(
            f"[[tool.dynamic-metadata]] provider {PROVIDER!r} takes no settings "
            f"(given: {', '.join(sorted(settings))})"
        )
    installed = torch_build.installed()
    if installed is None:
        _fail(
            "no torch in the build environment: name the release in "
            "[build-system] requires (torch==2.13.0), or install it before "
            "building with --no-build-isolation"
        )
    release = ".".join(str(n) for n in installed.release)
    _check_range(project.get("dependencies", []), installed.version)
    return {"dependencies": [f"torch=={release}"]}


def _check_range(requirements, version: str) -> None:
    """Stop when the torch built against is outside the project's own torch
    range: the wheel could not be installed beside it."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    release = Version(version).base_version
    for text in requirements:
        requirement = Requirement(text)
        if requirement.name.lower() == "torch" and not requirement.specifier.contains(
            release, prereleases=True
        ):
            _fail(
                f"the build environment has torch {version}, outside the project's "
                f"range ({text}): build against a torch the project supports"
            )


def get_requires_for_dynamic_metadata(settings=None):
    return []


# --- Steps of the tool's CMake project for a project (INFINI_OPS_PROJECT_DIR) -------


def _cmake_quoted(value: str) -> str:
    return '"' + value.replace("\\", "/").replace('"', '\\"') + '"'


def _generate(args) -> None:
    """Generate the project's sources for the CMake build directory (what
    `infiniops-codegen build` does first) and write the CMake settings that
    point the build at them."""
    from . import builder
    from ..render import writer
    from ..base.errors import SpecErrors
    from ..model.resolve import SelectionError

    try:
        project = projects.load(Path(args.project))
    except projects.ProjectError as e:
        raise BackendError(str(e)) from None
    projects.use(project)
    request = builder.BuildRequest(
        project=project,
        build_dir=Path(args.build_dir),
        ops=args.ops,
        platforms=_platforms(args.with_flags),
    )
    try:
        sources = builder.generate_sources(request, echo=print)
    except (SpecErrors, SelectionError) as e:
        raise BackendError(f"the project's specs do not generate:\n{e}") from None
    except (writer.ForeignFileError, builder.BuildError) as e:
        raise BackendError(str(e)) from None
    except OSError as e:
        raise BackendError(str(e)) from None
    lines = [
        "# Written by python -m infiniops_codegen.build_backend generate.",
        f"set(INFINI_OPS_GENERATED_DIR {_cmake_quoted(str(sources.generated_dir.resolve()))})",
        f"set(INFINI_OPS_KERNEL_ROOT {_cmake_quoted(str(project.kernels.resolve()))})",
        f"set(INFINI_OPS_SPEC_DIR {_cmake_quoted(str(project.specs.resolve()))})",
    ]
    Path(args.write).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _platforms(with_flags: str) -> tuple[str, ...]:
    """The platforms a wheel builds: each platform's default, unless the
    configure's WITH_<P>=ON/OFF (passed on as --with) says otherwise; the
    same choice as support/CMakeLists.txt makes from the same flags."""
    from ..base.platforms import load_platforms

    given = {}
    for pair in filter(None, with_flags.split(",")):
        flag, _, value = pair.partition("=")
        given[flag] = value.upper() in ("ON", "1", "TRUE", "YES", "Y")
    return tuple(p.name for p in load_platforms() if given.get(p.flag, p.default))


def _ports(args) -> None:
    """Print the CMake prefix path of the platforms' torch ports and write
    the loader's record of them (as `infiniops-codegen build` does)."""
    from . import builder

    platforms = tuple(p for p in args.platforms.split(",") if p)
    try:
        prefix_path = builder.write_ports_record(Path(args.record), platforms)
    except builder.BuildError as e:
        raise BackendError(str(e)) from None
    print(prefix_path, end="")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m infiniops_codegen.toolchain.wheel",
        description="Steps the tool's CMake project runs for a project "
        "(INFINI_OPS_PROJECT_DIR): not for people.",
    )
    steps = parser.add_subparsers(dest="step", required=True)
    generate = steps.add_parser("generate")
    generate.add_argument("--project", required=True)
    generate.add_argument("--build-dir", required=True)
    generate.add_argument("--ops", default=None)
    generate.add_argument("--write", required=True)
    generate.add_argument("--with", dest="with_flags", default="")
    ports = steps.add_parser("ports")
    ports.add_argument("--platforms", required=True)
    ports.add_argument("--record", required=True)
    args = parser.parse_args(argv)
    try:
        (_generate if args.step == "generate" else _ports)(args)
    except BackendError as e:
        print(f"infiniops-codegen: {e}", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
