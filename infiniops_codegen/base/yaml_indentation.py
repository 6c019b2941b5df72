"""Indentation mistakes in YAML, said in words and at the line to fix.

PyYAML reports a line that lines up with no block above it as `expected
<block end>, but found '<block sequence start>'`, and a line that is neither
`key: value` nor `- item` where one is expected as `could not find expected
':'` on the line after it (past the end of the file for the last line).
`explain` turns such an error into the offending line, what is wrong with it
and the indentation that would fit, read from the blocks open above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

LIST, MAPPING = "list", "mapping"


@dataclass
class _Block:
    kind: str  # LIST or MAPPING
    col: int  # 0-based column of its entries ('-' or the key)
    line: int  # 0-based line of its last entry so far
    indentless: bool = False  # a list at its parent key's column (`k:\n- a`)


def _blocks(text: str, limit: int) -> list[_Block]:
    """The block collections open just before text index `limit`, outermost
    first, each with the line of its last entry."""
    stack: list[_Block] = []
    flow = 0
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            mark = token.start_mark
            if mark.index >= limit:
                break
            if isinstance(
                token, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
            ):
                flow += 1
            elif isinstance(
                token, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)
            ):
                flow = max(flow - 1, 0)
            elif flow:
                continue  # keys and entries inside [...] and {...}
            elif isinstance(token, yaml.BlockMappingStartToken):
                stack.append(_Block(MAPPING, mark.column, mark.line))
            elif isinstance(token, yaml.BlockSequenceStartToken):
                stack.append(_Block(LIST, mark.column, mark.line))
            elif isinstance(token, yaml.BlockEndToken):
                while stack and stack[-1].indentless:
                    stack.pop()
                if stack:
                    stack.pop()
            elif isinstance(token, yaml.KeyToken) and stack:
                while stack[-1].indentless and stack[-1].col == mark.column:
                    stack.pop()  # the key ends the list at its own column
                stack[-1].line = mark.line
            elif isinstance(token, yaml.BlockEntryToken) and stack:
                top = stack[-1]
                if top.kind == MAPPING and top.col == mark.column:
                    # PyYAML opens no block for a list at its key's column.
                    top = _Block(LIST, mark.column, mark.line, indentless=True)
                    stack.append(top)
                top.line = mark.line
    except yaml.YAMLError:
        pass  # the error being explained; the tokens before it are enough
    return stack


def _spaces(n: int) -> str:
    return f"{n} space{'' if n == 1 else 's'}"


def _item_at(block: _Block, lines: list[str]) -> str:
    """How the block's last entry reads: `'- cpu'`, or the key `'aten'`."""
    source = lines[block.line] if block.line < len(lines) else ""
    text = source[block.col :].rstrip()
    if block.kind == MAPPING:
        text = text.split(":", 1)[0].strip()
    if len(text) > 40:
        text = text[:37] + "..."
    return f"'{text}'"


def _indent_like(block: _Block, lines: list[str]) -> str:
    what = "the item" if block.kind == LIST else "the key"
    how = f"indent it {_spaces(block.col)}" if block.col else "do not indent it"
    return f"{how}, like {what} {_item_at(block, lines)} on line {block.line + 1}"


def _misaligned(text: str, lines: list[str], mark, found: str):
    """A line whose indentation lines up with no open block: say which
    indentations would fit (the same kind of block, innermost first)."""
    item = found in ("'<block sequence start>'", "'-'")
    if not item and found not in ("'<block mapping start>'", "'?'"):
        return None
    kind, what = (LIST, "list item") if item else (MAPPING, "key")
    blocks = [b for b in reversed(_blocks(text, mark.index)) if b.col != mark.column]
    fits = [b for b in blocks if b.kind == kind][:2] or blocks[:2]
    if not fits:
        return None
    above = "list" if item else "mapping"
    message = (
        f"this {what} is "
        + (f"indented {_spaces(mark.column)}" if mark.column else "not indented")
        + f", which lines up with no {above} above it; "
        + _indent_like(fits[0], lines)
    )
    if len(fits) > 1:
        other = fits[1]
        which = "item" if other.kind == LIST else "key"
        message += (
            f", or {_spaces(other.col) if other.col else 'not at all'}, like the "
            f"{which} {_item_at(other, lines)} on line {other.line + 1}"
        )
    return mark.line + 1, mark.column + 1, message


def _not_an_entry(text: str, lines: list[str], mark):
    """A plain line where the block at its column wants `key: value` or
    `- item` (PyYAML: "could not find expected ':'", on the next line)."""
    source = lines[mark.line] if mark.line < len(lines) else ""
    entry = source[mark.column :].rstrip()
    at = mark.line + 1, mark.column + 1
    if entry.startswith("-") and entry[1:2] not in ("", " ", "\t"):
        return *at, (
            f"'{entry}' is no list item: YAML needs a space after '-'; "
            f"write '- {entry[1:].lstrip()}'"
        )
    blocks = [b for b in _blocks(text, mark.index) if b.col == mark.column]
    if not blocks:
        return *at, (
            f"'{entry}' is neither 'key: value' nor a list item '- ...' "
            "(a key without ':', or a line indented wrongly)"
        )
    block = blocks[-1]
    if block.kind == LIST:
        return *at, (
            f"this line lines up with the list items above (the item "
            f"{_item_at(block, lines)} on line {block.line + 1}) but does not "
            f"start with '- '; write '- {entry}'"
        )
    return *at, (
        f"this line lines up with the keys above (the key {_item_at(block, lines)} "
        f"on line {block.line + 1}) but has no ':'; write 'key: value', or "
        "indent it as an item of the list above ('- ...')"
    )


def _continued(text: str, lines: list[str], mark):
    """`key:` on a line indented more than the key above it: YAML reads it
    as the continuation of that key's value, then fails at its ':'."""
    previous = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.index >= mark.index:
                break
            previous = token
    except yaml.YAMLError:
        pass
    if not isinstance(previous, yaml.ScalarToken) or not previous.plain:
        return None
    if previous.start_mark.line == mark.line:
        return None  # `a: b: c` on one line: PyYAML's message says it
    blocks = _blocks(text, previous.start_mark.index)
    if not blocks or blocks[-1].kind != MAPPING:
        return None  # the value of a list item, not of a key
    source = lines[mark.line] if mark.line < len(lines) else ""
    col = len(source) - len(source.lstrip(" "))
    key = blocks[-1]
    return (
        mark.line + 1,
        col + 1,
        f"this key is indented more than the key {_item_at(key, lines)} above it "
        f"(line {key.line + 1}), so YAML reads this line as the rest of that "
        f"key's value; " + _indent_like(key, lines),
    )


def explain(text: str, error: yaml.MarkedYAMLError) -> tuple[int, int, str] | None:
    """(line, col, problem) of an indentation mistake behind a PyYAML error,
    1-based; None when the error is something else."""
    problem = error.problem or ""
    # Split as YAML counts lines, so the line numbers agree with its marks.
    lines = re.split(r"\r\n|[\r\n\x85\u2028\u2029]", text)
    if problem.startswith("expected <block end>, but found ") and error.problem_mark:
        found = problem[len("expected <block end>, but found ") :]
        return _misaligned(text, lines, error.problem_mark, found)
    if problem == "could not find expected ':'" and error.context_mark:
        return _not_an_entry(text, lines, error.context_mark)
    if problem == "mapping values are not allowed here" and error.problem_mark:
        return _continued(text, lines, error.problem_mark)
    return None
