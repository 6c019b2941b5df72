"""docs/architecture.md opens with the map of infiniops_codegen/: it names
exactly the folders and top-level modules the package has, and every
package says what its stage takes and gives."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "infiniops_codegen"
DOC = REPO / "docs" / "architecture.md"
# The stages' packages are few; the top level holds what has a fixed public
# path or none: the issue asked for "no more than ~10".
TOP_LEVEL_LIMIT = 10


def map_entries(text: str) -> list[str]:
    """The names of the map's block: `  name/  what` or `  name.py  what`."""
    section = text.split("## The map", 1)[1]
    block = section.split("```", 2)[1]
    lines = block.strip("\n").splitlines()
    assert lines[0] == "infiniops_codegen/", lines[0]
    entries = []
    for line in lines[1:]:
        match = re.fullmatch(r"  (\S+/|\S+\.py) {2,}\S.*", line)
        assert match, f"not a map line (two spaces, the name, what it holds): {line!r}"
        entries.append(match.group(1))
    return entries


def tree_entries() -> set[str]:
    folders = {
        f"{p.name}/"
        for p in PACKAGE.iterdir()
        if p.is_dir() and p.name != "__pycache__"
    }
    return folders | {p.name for p in PACKAGE.glob("*.py")}


def test_the_map_names_every_folder_and_module_and_no_other():
    entries = map_entries(DOC.read_text())
    assert len(entries) == len(set(entries)), "a name twice in the map"
    tree = tree_entries()
    assert sorted(set(entries) - tree) == [], "in the map, not in the tree"
    assert sorted(tree - set(entries)) == [], "in the tree, not in the map"


def test_the_map_check_fails_on_a_missing_or_stale_line():
    text = DOC.read_text()
    line = next(l for l in text.splitlines() if l.startswith("  model/ "))
    assert "model/" not in map_entries(text.replace(line + "\n", ""))
    stale = text.replace(line, line + "\n  stage9/           nothing")
    assert "stage9/" in map_entries(stale) and "stage9/" not in tree_entries()


def test_the_top_level_holds_few_modules():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= TOP_LEVEL_LIMIT, modules


def test_every_package_says_what_its_stage_takes_and_gives():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        for word in ("Takes:", "Gives:"):
            assert word in doc, f"{init.parent.name}/'s docstring says no {word}"
