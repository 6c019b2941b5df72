"""The module paths from before the package was cut by stage, and from
before its `build/` and `spec/` were renamed `toolchain/` and `opspec/`, keep
working for a release (infiniops_codegen/_moved.py): the moved module itself,
with a DeprecationWarning naming where it is; docs/changelog.md lists them
all."""

from __future__ import annotations

import importlib
import json
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
        # build.builder: neither build/builder.py nor a build/ folder (a
        # leftover build/__pycache__/ too: remove it).
        where = package.joinpath(*old.split("."))
        assert not where.with_suffix(".py").exists(), old
        if old not in PACKAGES_NOW:
            assert not where.exists(), f"{old}: {where} is still there"
        importlib.import_module(f"infiniops_codegen.{new}")


# Old modules whose name is a package's now (model.py is model/ops.py): the
# package gives the old module's names, with the warning.
PACKAGES_NOW = {"model": "Op", "render": "render_template", "scaffold": "ScaffoldError"}


# One fresh interpreter for all of them (this one has imported most already):
# for each old path, the warning it gives, and whether `from infiniops_codegen
# import <old>` (`infiniops_codegen.build.builder` for a dotted one) is the
# moved module itself. An old dotted path's parent (`build`) is imported first,
# so that each old path's own warning is the one recorded.
CHILD = """
import functools, importlib, json, sys, warnings
from infiniops_codegen._moved import MOVED
skip = set(sys.argv[1].split(","))
found = {}
for old, new in sorted(MOVED.items()):
    if old in skip:
        continue
    moved = importlib.import_module(f"infiniops_codegen.{new}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "." in old:
            importlib.import_module(f"infiniops_codegen.{old.rpartition('.')[0]}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alias = importlib.import_module(f"infiniops_codegen.{old}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        package = importlib.import_module("infiniops_codegen")
        named = functools.reduce(getattr, old.split("."), package)
    found[old] = {
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
        "same": alias is moved and named is moved,
    }
print(json.dumps(found))
"""


def test_an_old_path_is_the_moved_module_with_a_warning():
    done = subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(PACKAGES_NOW)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert sorted(found) == sorted(set(MOVED) - set(PACKAGES_NOW))
    wrong = {
        old: seen
        for old, seen in found.items()
        if not seen["same"]
        or seen["warnings"]
        != [
            f"DeprecationWarning: infiniops_codegen.{old} moved to "
            f"infiniops_codegen.{MOVED[old]}; the old path goes in the next release"
        ]
    }
    assert wrong == {}


# The ways a renamed stage's old path is written, each in a fresh
# interpreter: what `got` is (the moved module, or a name of it), the
# warnings it gives (one per old path imported), and that no module was
# loaded twice (the path finder, were it asked first, would find
# build/builder.py again under the toolchain package's __path__: a second
# module, which patching the first would miss).
FORMS = {
    "import infiniops_codegen.build.builder as got": (
        "toolchain.builder",
        None,
        ["build", "build.builder"],
    ),
    "from infiniops_codegen.build import builder as got": (
        "toolchain.builder",
        None,
        ["build"],
    ),
    "from infiniops_codegen.spec.entries import read_specs as got": (
        "opspec.entries",
        "read_specs",
        ["spec", "spec.entries"],
    ),
    "from infiniops_codegen.spec import entries as got": (
        "opspec.entries",
        None,
        ["spec"],
    ),
    "from infiniops_codegen import builder as got": (
        "toolchain.builder",
        None,
        ["builder"],
    ),
    "import infiniops_codegen.build as got": ("toolchain", None, ["build"]),
}

FORM_CHILD = """
import importlib, json, sys, warnings
statement, new, name = sys.argv[1:]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    exec(statement)
moved = importlib.import_module(new)
by_file = {}
for module in list(sys.modules.values()):
    if getattr(module, "__file__", None):
        by_file.setdefault(module.__file__, set()).add(id(module))
print(json.dumps({
    "same": got is (getattr(moved, name) if name else moved),
    "warnings": [str(w.message) for w in caught if w.category is DeprecationWarning],
    "twice": sorted(file for file, ids in by_file.items() if len(ids) > 1),
    "spec": moved.__spec__.name,
}))
"""


@pytest.mark.parametrize("statement", sorted(FORMS))
def test_a_renamed_stages_old_path_is_the_moved_module(statement):
    new, name, olds = FORMS[statement]
    new = f"infiniops_codegen.{new}"
    done = subprocess.run(
        [sys.executable, "-c", FORM_CHILD, statement, new, name or ""],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["same"], found
    assert found["twice"] == [], "a module loaded a second time"
    assert found["spec"] == new, "the moved module keeps its own spec"
    assert found["warnings"] == [
        f"infiniops_codegen.{old} moved to infiniops_codegen.{MOVED[old]}; "
        "the old path goes in the next release"
        for old in olds
    ]


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
            r"^\| `infiniops_codegen\.([\w.]+)` \| `infiniops_codegen\.([\w.]+)` \|$",
            text,
            re.M,
        )
    )
    assert listed == MOVED


def test_a_name_that_never_was_a_module_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("infiniops_codegen.no_such_module")
