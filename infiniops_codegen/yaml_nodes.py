"""YAML loading that keeps the line and column of every value.

Spec errors must point at `file:line:col`, which plain `yaml.safe_load`
forgets; this walks PyYAML's node graph instead and builds small wrappers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from .errors import SpecError


@dataclass(frozen=True)
class Node:
    value: Any  # str/int/float/bool/None, list[Node], or dict[str, Node]
    line: int
    col: int
    keys: dict[str, "Node"] = field(default_factory=dict)  # key positions

    @property
    def kind(self) -> str:
        if isinstance(self.value, dict):
            return "mapping"
        if isinstance(self.value, list):
            return "list"
        return "scalar"

    def plain(self) -> Any:
        """The value without positions."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


class _Loader(yaml.SafeLoader):
    pass


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(loader: _Loader, node: yaml.Node, path: str, errors: list[SpecError]):
    line, col = _mark(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves "<<" merge keys
        values: dict[str, Node] = {}
        keys: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            kline, kcol = _mark(key_node)
            if not isinstance(key, str):
                errors.append(
                    SpecError(path, kline, kcol, f"key {key!r} is not a string")
                )
                continue
            if key in values:
                errors.append(SpecError(path, kline, kcol, f"duplicate key '{key}'"))
                continue
            keys[key] = Node(key, kline, kcol)
            values[key] = _convert(loader, value_node, path, errors)
        return Node(values, line, col, keys)
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(loader, n, path, errors) for n in node.value], line, col)
    return Node(loader.construct_object(node, deep=True), line, col)


def load_yaml(text: str, path: str, errors: list[SpecError]) -> Node | None:
    """Parse one document; malformed YAML becomes a located SpecError."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Node(None, 1, 1)
        return _convert(loader, root, path, errors)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = e.problem or e.context or "malformed YAML"
        errors.append(SpecError(path, line, col, f"malformed YAML: {problem}"))
    except yaml.YAMLError as e:
        errors.append(SpecError(path, 1, 1, f"malformed YAML: {e}"))
    finally:
        loader.dispose()
    return None
