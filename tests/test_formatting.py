"""black sees every Python file of the tool: `black --check .` (CI) lists
each file it checks, and that list is every Python file git has but those
`[tool.black] extend-exclude` leaves out on purpose (generated text). A folder
that black's default exclude matches (any `build/`, `dist/`, `venv/`, ...)
was skipped without a word: `infiniops_codegen/build/` was, until it became
`toolchain/` (docs/changelog.md). Nor does the package name a folder as other
tools' output or tests: pytest's `norecursedirs`, a `spec/` or `tests/`."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

from black import const as black_const

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
# Folder names that test runners and IDEs take for tests (RSpec's spec/).
TEST_FOLDERS = ("test", "tests", "spec", "specs")

# What `black -v` says of each file it checked.
_CHECKED = re.compile(
    r"^(?:(?P<path>.+?\.pyi?) (?:already well formatted, good job|"
    r"wasn't modified on disk since last run)\.|would reformat (?P<wrong>.+\.pyi?)|"
    r"error: cannot format (?P<error>.+?\.pyi?): .*)$"
)


def black_checked(root: Path) -> set[str]:
    """The files `black --check -v .` checks in root, relative to it."""
    done = subprocess.run(
        [sys.executable, "-m", "black", "--check", "-v", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: a file to reformat
    checked = set()
    for line in done.stderr.splitlines():
        match = _CHECKED.match(line)
        if match:
            path = Path(match["path"] or match["wrong"] or match["error"])
            checked.add((root / path).resolve().relative_to(root).as_posix())
    return checked


def git_python_files(root: Path) -> list[str]:
    """The Python files git has in root: tracked, and new ones not ignored
    (black reads .gitignore as git does)."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
        + ["--", "*.py", "*.pyi"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"git ls-files: {done.stderr}"
    return sorted({p for p in done.stdout.splitlines() if (root / p).is_file()})


def left_out_on_purpose(root: Path) -> str:
    """[tool.black] extend-exclude: matched, as black does, against the path
    from the project root with a leading /."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return config["tool"]["black"]["extend-exclude"]


def unchecked(root: Path) -> tuple[list[str], list[str]]:
    """The Python files black should check but does not, and those it checks
    that git does not have."""
    excluded = re.compile(left_out_on_purpose(root))
    expected = {p for p in git_python_files(root) if not excluded.search(f"/{p}")}
    checked = black_checked(root)
    return sorted(expected - checked), sorted(checked - expected)


def test_black_checks_every_python_file_but_the_generated_ones():
    missing, extra = unchecked(REPO)
    assert missing == [], "black skips these (an exclude regex matches them)"
    assert extra == [], "black checks these, which git does not have"


def test_no_python_file_lies_in_a_folder_blacks_default_excludes():
    default = re.compile(black_const.DEFAULT_EXCLUDES)
    hidden = [p for p in git_python_files(REPO) if default.search(f"/{p}")]
    assert hidden == []


def package_folders(root: Path) -> set[str]:
    """The names of the folders under root/infiniops_codegen/ that hold a
    file git tracks (Python, data, templates, C++)."""
    done = subprocess.run(
        ["git", "ls-files", "--", "infiniops_codegen"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"git ls-files: {done.stderr}"
    return {
        part
        for path in done.stdout.splitlines()
        for part in Path(path).parent.parts[1:]
    }


def test_no_folder_of_the_package_is_named_as_output_or_tests(pytestconfig):
    # The repository sets no norecursedirs: this is pytest's default (build,
    # dist, venv, *.egg, .*, _darcs, CVS, node_modules, {arch}).
    skipped = pytestconfig.getini("norecursedirs")
    assert "build" in skipped and "dist" in skipped, skipped
    named = sorted(
        folder
        for folder in package_folders(REPO)
        if folder in TEST_FOLDERS
        or any(fnmatch.fnmatch(folder, pattern) for pattern in skipped)
    )
    assert named == []
