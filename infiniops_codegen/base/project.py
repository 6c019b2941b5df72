"""The user's project: the directory tree the tool generates and builds for.

A project is a directory whose pyproject.toml has a `[tool.infiniops-codegen]`
table; the tool works on the nearest one at or above the working directory,
or on the one `--project DIR` names. The table says where the project keeps
its parts, every path relative to the project and inside it:

    [tool.infiniops-codegen]
    specs = "op_specs"         # op spec YAML files
    generated = "generated"    # the default op set's sources (committed)
    kernels = "cpp/kernels"    # native kernels: <kernels>/<platform>/*.cc, ...
    build-dir = "build"        # the default build directory
    name = "mylib"             # the library's name (below)
    platforms = "platforms.yaml"  # the project's own platforms (below)

(all optional; these are the defaults, but for `name` and `platforms`).

`platforms` names a YAML file of platforms the project adds to the tool's
table (infiniops_codegen/data/platforms.yaml, same format; rows after the
tool's): a vendor's platform without editing the tool
(docs/adding-a-platform.md). Without the key the project has none.

`name` names what the build makes: the Python module (`import mylib`), the
C++ library (libmylib.so), the CMake target (`<package>::mylib`) and the
profiler/dispatcher namespace (`mylib::<op>`). It must be a lower-case
identifier that is neither a Python nor a C++ keyword. Two more keys follow it
unless given: `namespace`, the C++ namespace of the public API (default: the
name; `a::b` nests), and `cmake-package`, the CMake package
(`find_package(<package>)`, default: the name). A table without `name` keeps
the tool's historical names: `infiniops`, `infini::ops`, `InfiniOps`
(docs/projects.md). What is not the user's (templates,
the CMake project, the core and torch bridge sources) ships with the tool
(locations.SUPPORT_DIR).

Where generation goes, for `generate` and `build` alike: the default op set
of the project's own specs into the project's `generated/`; anything else
(another selection, other specs) into `<build dir>/generated/`. The tool
writes nowhere else unless told (`generate --out`).

Standard library only (tomllib), like locations.py: `runtime.load()` uses it.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 dependency of pyproject.toml
    import tomli as tomllib

MARKER = "pyproject.toml"
TABLE = "infiniops-codegen"  # [tool.infiniops-codegen]
# key -> default, all relative to the project root
KEYS = {
    "specs": "op_specs",
    "generated": "generated",
    "kernels": "cpp/kernels",
    "build-dir": "build",
}
# key -> example; no default: absent means none
OPTIONAL_KEYS = {"platforms": "platforms.yaml"}


# The names of a table without `name` (this repository's).
DEFAULT_NAMES = {
    "name": "infiniops",
    "namespace": "infini::ops",
    "cmake-package": "InfiniOps",
}
NAME_KEYS = tuple(DEFAULT_NAMES)

_PYTHON_KEYWORDS = frozenset(__import__("keyword").kwlist)
# C++20 keywords and alternative tokens a lower-case identifier could spell.
_CXX_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char
    char8_t char16_t char32_t class compl concept const consteval constexpr constinit
    const_cast continue co_await co_return co_yield decltype default delete do double
    dynamic_cast else enum explicit export extern false float for friend goto if inline
    int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
    xor_eq std""".split()
)
# Names the build or the tool already uses for something else.
_RESERVED_NAMES = frozenset({"torch", "infiniops_codegen", "at", "c10", "python"})


def _check_name(value: object, key: str) -> str:
    """value as a `name`/`namespace`/`cmake-package`; ValueError saying why
    not, with an example."""
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string, e.g. {_NAME_EXAMPLES[key]!r}")
    if key == "name":
        if not re.fullmatch(r"[a-z][a-z0-9_]*", value):
            raise ValueError(
                f"'name' = {value!r} must be a lower-case identifier (letters, "
                "digits, '_'; a letter first), e.g. 'mylib': it names the Python "
                "module, the C++ library and the profiler namespace"
            )
        if (
            value in _PYTHON_KEYWORDS
            or value in _CXX_KEYWORDS
            or value in _RESERVED_NAMES
        ):
            raise ValueError(
                f"'name' = {value!r} is a Python or C++ keyword or a name torch "
                "or the tool uses; choose another, e.g. 'mylib'"
            )
    elif key == "namespace":
        parts = value.split("::")
        if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts):
            raise ValueError(
                f"'namespace' = {value!r} must be a C++ namespace: identifiers "
                "joined by '::', e.g. 'mylib' or 'acme::ops'"
            )
        bad = [p for p in parts if p in _CXX_KEYWORDS or p.startswith("__")]
        if bad or parts[0] in ("at", "c10", "torch"):
            raise ValueError(
                f"'namespace' = {value!r} uses a C++ keyword, a reserved "
                "identifier or torch's namespace; e.g. 'mylib'"
            )
        if value.startswith(CORE_NAMESPACE + "::"):
            raise ValueError(
                f"'namespace' = {value!r} nests inside the core's namespace "
                f"'{CORE_NAMESPACE}'; choose one of the project's own, e.g. 'mylib'"
            )
    elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ValueError(
            f"'cmake-package' = {value!r} must be an identifier (find_package"
            "(<package>)), e.g. 'MyLib'"
        )
    return value


_NAME_EXAMPLES = {"name": "mylib", "namespace": "mylib", "cmake-package": "MyLib"}


@dataclass(frozen=True)
class LibraryNames:
    """What a build is called (module docstring): the Python module and the
    C++ library (`name`), the C++ namespace of its public API, its CMake
    package. The default is this repository's."""

    name: str = DEFAULT_NAMES["name"]
    namespace: str = DEFAULT_NAMES["namespace"]
    cmake_package: str = DEFAULT_NAMES["cmake-package"]

    @property
    def cmake_target(self) -> str:
        """What a CMake caller links: `<package>::<name>`."""
        return f"{self.cmake_package}::{self.name}"

    @property
    def core_namespace(self) -> bool:
        """The public API shares the core's namespace (infini::ops): its types
        need no using-declarations there."""
        return self.namespace == CORE_NAMESPACE

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "cmake_package": self.cmake_package,
        }


# The hand-written core and bridge: the same in every library, hidden in each.
CORE_NAMESPACE = "infini::ops"


class ProjectError(Exception):
    """No project, or a malformed table; the message is for people
    (`path:line:col: ...` where the table is at fault)."""


@dataclass(frozen=True)
class Project:
    root: Path
    specs: Path  # op spec YAML files
    generated: Path  # the default op set's generated sources (committed)
    kernels: Path  # native kernels, one directory per platform
    build_dir: Path  # the default build directory
    # The library's names (module docstring).
    names: LibraryNames = LibraryNames()
    platforms: Path | None = None  # the project's own platform table

    @property
    def name(self) -> str:
        return self.names.name

    def generated_dir(self, spec_dir: Path, default_set: bool, build_dir: Path) -> Path:
        """Where a generation goes (the one rule of the module docstring)."""
        if default_set and Path(spec_dir).resolve() == self.specs.resolve():
            return self.generated
        return Path(build_dir) / "generated"

    def rel(self, path: Path) -> str:
        """path as shown to people: relative to the project when inside it."""
        try:
            return str(Path(path).resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def _table_line(text: str, key: str | None) -> tuple[int, int]:
    """(line, col) of `key = ...` inside the [tool.infiniops-codegen] table,
    or of the table's header when key is None or not found: tomllib gives no
    positions, and the table is a few lines people wrote by hand."""
    header = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            if header is not None:
                break
            if line.replace(" ", "") in (f"[tool.{TABLE}]", f'[tool."{TABLE}"]'):
                header = n
            continue
        if header is not None and key is not None:
            name = line.split("=", 1)[0].strip().strip('"')
            if "=" in line and name == key:
                return n, raw.index(line[0]) + 1
    return (header or 1), 1


def inside(text: str, key: str, root: str) -> PurePosixPath:
    """text as a path relative to root that stays inside it; ValueError
    saying what is wrong otherwise (project tables, extension manifests)."""
    path = PurePosixPath(text.replace("\\", "/"))
    if path.is_absolute() or ":" in path.parts[0]:
        raise ValueError(
            f"'{key}' = '{text}' is absolute; paths are relative to the {root}"
        )
    if ".." in path.parts:
        raise ValueError(f"'{key}' = '{text}' leaves the {root} ('..')")
    return path


def _relative(value: object, key: str, where: str) -> PurePosixPath:
    if not isinstance(value, str) or not value.strip():
        example = KEYS.get(key) or OPTIONAL_KEYS[key]
        raise ProjectError(f"{where}: '{key}' must be a path string, e.g. {example!r}")
    try:
        return inside(value, key, "project")
    except ValueError as e:
        raise ProjectError(f"{where}: {e}") from None


def _table(pyproject: Path) -> tuple[dict, str] | None:
    """The [tool.infiniops-codegen] table and the file's text; None when the
    file has no such table. ProjectError when it is not valid TOML."""
    text = pyproject.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # "... (at line 2, column 11)": the position is only in the text
        # before Python 3.14.
        m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", str(e))
        line, col = (m.group(1), m.group(2)) if m else (1, 1)
        what = str(e)[: m.start()] if m else str(e)
        raise ProjectError(
            f"{pyproject}:{line}:{col}: not valid TOML: {what}"
        ) from None
    table = data.get("tool", {}).get(TABLE)
    if table is None:
        return None
    if not isinstance(table, dict):
        line, col = _table_line(text, None)
        raise ProjectError(f"{pyproject}:{line}:{col}: [tool.{TABLE}] must be a table")
    return table, text


def load(root: Path) -> Project:
    """The project at root; ProjectError when root has no marker or the
    table is malformed."""
    root = Path(root).resolve()
    pyproject = root / MARKER
    found = _table(pyproject) if pyproject.is_file() else None
    if found is None:
        raise ProjectError(
            f"{root} is not an infiniops-codegen project: it needs a {MARKER} "
            f"with a [tool.{TABLE}] table (docs/projects.md)"
        )
    table, text = found
    paths, names = {}, {}
    for key, value in table.items():
        line, col = _table_line(text, key)
        where = f"{pyproject}:{line}:{col}"
        if key in NAME_KEYS:
            try:
                names[key] = _check_name(value, key)
            except ValueError as e:
                raise ProjectError(f"{where}: {e}") from None
            continue
        if key not in KEYS and key not in OPTIONAL_KEYS:
            raise ProjectError(
                f"{where}: unknown key '{key}' in [tool.{TABLE}]; "
                f"known: {', '.join((*KEYS, *OPTIONAL_KEYS, *NAME_KEYS))}"
            )
        paths[key] = _relative(value, key, where)
    if "name" in names:  # the other names follow it
        names = {"namespace": names["name"], "cmake-package": names["name"], **names}
    elif names:
        key = next(iter(names))
        line, col = _table_line(text, key)
        raise ProjectError(
            f"{pyproject}:{line}:{col}: '{key}' needs 'name' beside it (the "
            "library's name, e.g. name = 'mylib')"
        )
    else:
        names = dict(DEFAULT_NAMES)
    resolved = {k: root / paths.get(k, PurePosixPath(d)) for k, d in KEYS.items()}
    return Project(
        root=root,
        specs=resolved["specs"],
        generated=resolved["generated"],
        kernels=resolved["kernels"],
        build_dir=resolved["build-dir"],
        names=LibraryNames(
            name=names["name"],
            namespace=names["namespace"],
            cmake_package=names["cmake-package"],
        ),
        platforms=root / paths["platforms"] if "platforms" in paths else None,
    )


def find(start: Path | None = None) -> Project:
    """The nearest project at or above start (default: the working directory)."""
    start = Path(start or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        pyproject = directory / MARKER
        if pyproject.is_file() and _table(pyproject) is not None:
            return load(directory)
    raise ProjectError(
        f"no infiniops-codegen project at or above {start}: run inside one (a "
        f"directory whose {MARKER} has a [tool.{TABLE}] table) or pass "
        "--project DIR"
    )


_current: Project | None = None


def use(project: Project | None) -> None:
    """Make project the current one (the CLI's --project); None forgets it."""
    global _current
    _current = project


def discover() -> Project:
    """The project named by $INFINIOPS_PROJECT, else the nearest at or above
    the working directory."""
    named = os.environ.get("INFINIOPS_PROJECT")
    return load(Path(named)) if named else find()


def current() -> Project:
    """The project the tool works on: the one use() set, else discover()."""
    return _current if _current is not None else discover()


def check_name(value: object) -> str:
    """value as a project's `name` (the rule of the module docstring);
    ValueError saying why not, with an example. `init --name` checks with it."""
    return _check_name(value, "name")
