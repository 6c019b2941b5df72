"""The module paths from before the package was cut by stage keep working
for a release (infiniops_codegen/_moved.py): the moved module itself, with a
DeprecationWarning naming where it is; docs/changelog.md lists them all."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen._moved import MOVED

REPO = Path(__file__).resolve().parent.parent


def test_every_new_path_exists_and_no_old_one_does():
    package = REPO / "infiniops_codegen"
    for old, new in MOVED.items():
        assert not (package / f"{old}.py").exists(), old
        importlib.import_module(f"infiniops_codegen.{new}")


# Old modules whose name is a package's now (model.py is model/ops.py): the
# package gives the old module's names, with the warning.
PACKAGES_NOW = {"model": "Op", "render": "render_template", "scaffold": "ScaffoldError"}


@pytest.mark.parametrize("old", sorted(set(MOVED) - set(PACKAGES_NOW)))
def test_an_old_path_is_the_moved_module_with_a_warning(old):
    # A fresh interpreter: this one has imported most of them already.
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error')\n"
        f"new = importlib.import_module('infiniops_codegen.{MOVED[old]}')\n"
        "try:\n"
        f"    importlib.import_module('infiniops_codegen.{old}')\n"
        "except DeprecationWarning as e:\n"
        "    print(e)\n"
        "warnings.simplefilter('ignore')\n"
        f"from infiniops_codegen import {old} as alias\n"
        "assert alias is new, (alias, new)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"infiniops_codegen.{old} moved to infiniops_codegen.{MOVED[old]}; "
        "the old path goes in the next release"
    )


@pytest.mark.parametrize("old", sorted(PACKAGES_NOW))
def test_an_old_modules_names_read_through_its_package_warn(old):
    name = PACKAGES_NOW[old]
    moved = importlib.import_module(f"infiniops_codegen.{MOVED[old]}")
    package = importlib.import_module(f"infiniops_codegen.{old}")
    with pytest.warns(
        DeprecationWarning, match=f"moved to infiniops_codegen.{MOVED[old]}.{name};"
    ):
        assert getattr(package, name) is getattr(moved, name)
    with pytest.raises(AttributeError):
        package.no_such_name


def test_the_changelog_lists_every_moved_path():
    text = (REPO / "docs" / "changelog.md").read_text()
    listed = dict(
        re.findall(
            r"^\| `infiniops_codegen\.(\w+)` \| `infiniops_codegen\.([\w.]+)` \|$",
            text,
            re.M,
        )
    )
    assert listed == MOVED


def test_a_name_that_never_was_a_module_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("infiniops_codegen.no_such_module")
