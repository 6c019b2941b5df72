"""`infiniops-codegen init DIR --name NAME`: a new project that builds and
tests at once.

The files' texts are templates (scaffold/templates/); this module says which go
where, refuses a directory that is not empty unless forced, and writes. With
force it writes only the scaffold's own files, over what is there, and
touches nothing else. The CLI then generates the project's generated/.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from .. import __version__
from ..base.locations import INIT_TEMPLATE_DIR
from ..base.project import check_name

# Path in the new project -> its template under templates/ (beside this module).
FILES = {
    "pyproject.toml": "pyproject.toml.j2",
    ".gitignore": "gitignore.j2",
    "README.md": "README.md.j2",
    "op_specs/ops.yaml": "ops.yaml.j2",
    "cpp/kernels/cpu/relu.cc": "relu.cc.j2",
    "tests/conftest.py": "conftest.py.j2",
    "tests/test_ops.py": "test_ops.py.j2",
    ".github/workflows/ci.yml": "ci.yml.j2",
}
SHOWN_ENTRIES = 5  # of a directory that is not empty, in the refusal


class ScaffoldError(Exception):
    """The scaffold cannot be written; the message is for people."""


@dataclass
class Plan:
    directory: Path
    files: dict[str, str]  # path in the project -> text
    new: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)  # there, other text
    unchanged: list[str] = field(default_factory=list)  # there, the same text


def _torch_release() -> str:
    """The installed torch's release ('2.13.0'), which CI should pin."""
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return "2.13.0"  # the release the tool is developed on


def render(name: str) -> dict[str, str]:
    """The scaffold's files for a project named name (checked by the caller)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(INIT_TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    from ..base.torch_release import supported

    tested = supported()
    values = {
        "name": name,
        "version": __version__,
        "torch": _torch_release(),
        "torch_range": str(tested.torch),
        "python_range": str(tested.python),
    }
    return {rel: env.get_template(t).render(**values) for rel, t in FILES.items()}


def _entries(directory: Path) -> list[str]:
    return sorted(p.name + ("/" if p.is_dir() else "") for p in directory.iterdir())


def plan(directory: Path, name: str, force: bool) -> Plan:
    """What init would write into directory; ScaffoldError for a bad name, a
    directory that is not empty (without force), or a path in the way."""
    try:
        check_name(name)
    except ValueError as e:
        raise ScaffoldError(f"--name: {e}") from None
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ScaffoldError(f"{directory} exists and is not a directory")
    entries = _entries(directory) if directory.is_dir() else []
    if entries and not force:
        shown = ", ".join(entries[:SHOWN_ENTRIES])
        if len(entries) > SHOWN_ENTRIES:
            shown += f" and {len(entries) - SHOWN_ENTRIES} more"
        raise ScaffoldError(
            f"{directory} is not empty ({shown}): init writes a new project "
            "into a new or empty directory; --force writes the scaffold's files "
            f"({', '.join(FILES)}) over any of them there and leaves every other "
            "file as it is"
        )
    result = Plan(directory, render(name))
    for rel, text in result.files.items():
        path = directory / rel
        for parent in Path(rel).parents:
            if parent != Path(".") and (directory / parent).exists():
                if not (directory / parent).is_dir():
                    raise ScaffoldError(
                        f"{directory / parent} is in the way of {rel}: it is not "
                        "a directory"
                    )
        if path.is_dir():
            raise ScaffoldError(f"{path} is in the way: a directory, not a file")
        if not path.exists():
            result.new.append(rel)
        elif path.read_text(encoding="utf-8", errors="replace") == text:
            result.unchanged.append(rel)
        else:
            result.overwritten.append(rel)
    return result


def write(p: Plan) -> None:
    """Writes the planned files (only those: nothing else is touched)."""
    for rel in p.new + p.overwritten:
        path = p.directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(p.files[rel], encoding="utf-8")
