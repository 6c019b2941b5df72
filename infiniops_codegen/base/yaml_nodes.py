"""YAML loading that keeps the line and column of every value.

Spec errors must point at `file:line:col`, which plain `yaml.safe_load`
forgets; this walks PyYAML's node graph instead and builds small wrappers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from . import yaml_indentation
from .errors import SpecError


@dataclass(frozen=True)
class Fold:
    """Where a plain scalar continues on a later source line.

    YAML joins a plain (unquoted) scalar's continuation lines with spaces, so
    an over-indented `- item` under `- name` silently becomes the one string
    'name - item'. Readers that expect a one-line name report this instead of
    the joined string."""

    line: int  # the continuation line (1-based)
    col: int  # its first non-blank character (1-based)
    item: bool  # that line starts with "- ": an over-indented list item
    lines: int = 2  # non-blank source lines the scalar was joined from


@dataclass(frozen=True)
class Node:
    value: Any  # str/int/float/bool/None, list[Node], or dict[str, Node]
    line: int
    col: int
    keys: dict[str, "Node"] = field(default_factory=dict)  # key positions
    fold: Fold | None = None  # a plain scalar written over several lines

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


def _fold(node: yaml.Node, text: str) -> Fold | None:
    """The continuation line of a multi-line plain scalar: the first one that
    looks like a list item, else the first one."""
    if not isinstance(node, yaml.ScalarNode) or node.style is not None:
        return None  # quoted and block scalars span lines on purpose
    start, end = node.start_mark, node.end_mark
    if end.line == start.line:
        return None
    # Split as YAML counts lines, so the line numbers agree with its marks.
    lines = re.split(r"\r\n|[\r\n\x85\u2028\u2029]", text[start.index : end.index])
    count = sum(1 for source in lines if source.strip())
    first = None
    for offset, source in enumerate(lines[1:], 1):
        stripped = source.lstrip(" \t")
        if not stripped:
            continue  # an empty line inside the scalar
        fold = Fold(
            start.line + 1 + offset,
            len(source) - len(stripped) + 1,
            stripped == "-" or stripped.startswith(("- ", "-\t")),
            count,
        )
        if fold.item:
            return fold
        first = first or fold
    return first


def _convert(
    loader: _Loader, node: yaml.Node, text: str, path: str, errors: list[SpecError]
):
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
            values[key] = _convert(loader, value_node, text, path, errors)
        return Node(values, line, col, keys)
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(loader, n, text, path, errors) for n in node.value]
        return Node(items, line, col)
    value = loader.construct_object(node, deep=True)
    return Node(value, line, col, fold=_fold(node, text))


# -- unclosed flow collections ---------------------------------------------
# A `{` or `[` without its closing bracket makes PyYAML read the following
# lines as part of the flow collection and fail there, on a later line, with
# "expected ',' or '}'". The position worth reporting is the opening bracket.

_CLOSING = {"[": "]", "{": "}"}


def _open_brackets(text: str, limit: int) -> list[yaml.Mark]:
    """Flow collections PyYAML's scanner has open at text index `limit`
    (outermost first), by the marks of their opening brackets."""
    stack: list[yaml.Mark] = []
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.index >= limit:
                break
            if isinstance(
                token, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
            ):
                stack.append(token.start_mark)
            elif (
                isinstance(token, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken))
                and stack
            ):
                stack.pop()
    except yaml.YAMLError:
        pass  # the error being explained; the tokens before it are enough
    return stack


def _skip_quoted(text: str, i: int) -> int | None:
    """Index after the quoted scalar starting at text[i]; None if unterminated."""
    quote, i = text[i], i + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
        elif text[i] == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2  # '' is an escaped quote
            else:
                return i + 1
        else:
            i += 1
    return None


def _never_closed(text: str, start: int) -> bool:
    """Whether the bracket at text[start] has no matching closing bracket:
    none before the end of the text, or a closing bracket of the other kind
    comes first. Skips quoted scalars and comments."""
    stack = [text[start]]
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == "#" and text[i - 1] in " \t\n":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if c in "'\"" and text[i - 1] in " \t\n[{,:":
            after = _skip_quoted(text, i)
            if after is None:
                return False  # an unterminated quote: PyYAML's message is right
            i = after
            continue
        if c in _CLOSING:
            stack.append(c)
        elif c in "]}":
            if _CLOSING[stack.pop()] != c:
                return True  # e.g. `[cpu}`
            if not stack:
                return False
        i += 1
    return True


def unclosed_bracket(text: str, error_index: int) -> yaml.Mark | None:
    """The opening bracket to blame for a YAML syntax error at `error_index`:
    the innermost flow collection open there, if it is never closed."""
    stack = _open_brackets(text, error_index)
    if stack and _never_closed(text, stack[-1].index):
        return stack[-1]
    return None


def load_yaml(text: str, path: str, errors: list[SpecError]) -> Node | None:
    """Parse one document; malformed YAML becomes a located SpecError."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return Node(None, 1, 1)
        return _convert(loader, root, text, path, errors)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = e.problem or e.context or "malformed YAML"
        opened = unclosed_bracket(text, mark.index) if mark else None
        indentation = yaml_indentation.explain(text, e) if opened is None else None
        if indentation is not None:
            line, col, problem = indentation
        elif opened is not None:
            bracket = text[opened.index]
            line, col = opened.line + 1, opened.column + 1
            problem = (
                f"'{bracket}' opened here is never closed "
                f"(missing '{_CLOSING[bracket]}')"
            )
        errors.append(SpecError(path, line, col, f"malformed YAML: {problem}"))
    except yaml.YAMLError as e:
        errors.append(SpecError(path, 1, 1, f"malformed YAML: {e}"))
    finally:
        loader.dispose()
    return None
