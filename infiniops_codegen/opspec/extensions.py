"""Extensions: op specs and native kernels from outside the project.

An extension is a directory with a manifest, `infiniops-extension.yaml`:

    name: my_ops            # an identifier; names the extension in errors and `list`
    specs: op_specs         # its op spec YAML files (default: op_specs)
    kernels: kernels        # its native kernels: <kernels>/<platform>/<op>.<ext>
                            # (default: kernels)
    description: ...        # optional, for people

`generate` and `build` take it with `--extension DIR` (repeatable): its ops
join the project's (every one of them, whatever `--ops` selects), its kernels
are compiled from its own directory, and the generation is not the project's
default set, so it goes to `<build dir>/generated/` (base/project.py). Paths are
relative to the extension and stay inside it; every problem is located in
the manifest (`file:line:col`). An op name the project (or another extension)
already defines is a located error at the extension's spec entry.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import SpecError, SpecErrors
from ..base.project import inside
from .entries import display_path as _display
from ..base.yaml_nodes import Node, load_yaml

MANIFEST_NAME = "infiniops-extension.yaml"
KEYS = ("name", "specs", "kernels", "description")
DEFAULTS = {"specs": "op_specs", "kernels": "kernels"}


@dataclass(frozen=True)
class Extension:
    name: str
    root: Path
    specs: Path
    kernels: Path


def load(directory: Path) -> Extension:
    """The extension in directory; SpecErrors (located) when its manifest is
    missing or wrong."""
    root = Path(directory).resolve()
    manifest = root / MANIFEST_NAME
    shown = _display(manifest)
    if not root.is_dir():
        raise SpecErrors(
            [SpecError(str(directory), 1, 1, "extension directory not found")]
        )
    if not manifest.is_file():
        raise SpecErrors(
            [
                SpecError(
                    shown,
                    1,
                    1,
                    f"not an extension: {MANIFEST_NAME} not found (it names the "
                    "extension and its specs and kernels directories)",
                )
            ]
        )
    errors: list[SpecError] = []
    node = load_yaml(manifest.read_text(encoding="utf-8"), shown, errors)
    if errors:
        raise SpecErrors(errors)

    def fail(at: Node, message: str) -> None:
        errors.append(SpecError(shown, at.line, at.col, message))

    if node is None or node.kind != "mapping":
        line, col = (node.line, node.col) if node is not None else (1, 1)
        raise SpecErrors(
            [SpecError(shown, line, col, "an extension manifest must be a mapping")]
        )
    for key, key_node in node.keys.items():
        if key not in KEYS:
            fail(
                key_node,
                f"unknown key '{key}' in an extension manifest; known: {', '.join(KEYS)}",
            )
    values: dict[str, str] = {}
    for key in ("name", "specs", "kernels", "description"):
        value = node.value.get(key)
        if value is None:
            continue
        if (
            value.kind != "scalar"
            or not isinstance(value.value, str)
            or not value.value.strip()
        ):
            fail(value, f"'{key}' must be a non-empty string")
            continue
        values[key] = value.value.strip()
    name = values.get("name")
    if "name" not in node.value:
        fail(
            node,
            "an extension manifest needs 'name' (an identifier, e.g. name: my_ops)",
        )
    elif name is not None and (not name.isidentifier() or keyword.iskeyword(name)):
        fail(node.value["name"], f"extension name '{name}' is not an identifier")
    paths = {}
    for key, default in DEFAULTS.items():
        text = values.get(key, default)
        at = node.value.get(key, node)
        try:
            paths[key] = root / inside(text, key, "extension")
        except ValueError as e:
            fail(at, str(e))
            continue
        if key == "specs" and not paths[key].is_dir():
            fail(at, f"the extension's specs directory '{text}' does not exist")
    if errors:
        raise SpecErrors(errors)
    return Extension(
        name=name, root=root, specs=paths["specs"], kernels=paths["kernels"]
    )


def load_all(directories) -> tuple[Extension, ...]:
    """Every --extension, checked together: two with one name is an error."""
    loaded: list[Extension] = []
    errors: list[SpecError] = []
    for directory in directories:
        try:
            ext = load(Path(directory))
        except SpecErrors as e:
            errors += e.errors
            continue
        same = next(
            (e for e in loaded if e.name == ext.name or e.root == ext.root), None
        )
        if same is not None:
            errors.append(
                SpecError(
                    _display(ext.root / MANIFEST_NAME),
                    1,
                    1,
                    f"extension '{ext.name}' is given twice (also {same.root})",
                )
            )
            continue
        loaded.append(ext)
    if errors:
        raise SpecErrors(errors)
    return tuple(loaded)
