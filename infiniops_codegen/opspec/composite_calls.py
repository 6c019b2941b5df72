"""The ATen operators a composite's C++ body calls, to check its `uses:`.

`uses` says which per-operator ATen headers (`ATen/ops/<name>.h`) the
generated shard includes for the body; the shard includes no umbrella
header, so a call the list lacks does not compile (or compiles only while
another op of the same shard happens to include its header). The body is
what is true: model/resolve.py reports each operator it calls that `uses` does not
list, and each entry of `uses` it does not call.

A call is `at::<name>(` (or `::at::<name>(`) outside comments and literals,
whose name is an operator's header stem as it is or without one of the
suffixes the per-operator header also declares (`_out`, `_outf`,
`_symint`, an in-place `_`): `at::mul_out(` calls `mul`. Nested namespaces
(`at::native::`, `at::cpu::`) and names that are no operator
(`at::parallel_for`) are not calls of `uses`.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

# Comments and string or character literals, blanked before looking for
# calls (newlines kept, for the line numbers).
_SKIPPED = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S
)
_CALL = re.compile(r"(?<![\w:])(?:::)?at::([A-Za-z_]\w*)\s*(?:<[^<>;]*>\s*)?\(")
# What a per-operator header declares besides at::<name>, longest first.
_SUFFIXES = ("_symint_outf", "_symint_out", "_outf", "_out", "_symint", "_")


@dataclass(frozen=True)
class Call:
    operator: str  # the header stem `uses` names, e.g. "mul"
    spelled: str  # as the body writes it, e.g. "at::mul_out"
    line: int  # 0-based line of the body


def operator_of(name: str, headers: Container[str]) -> str | None:
    """The operator whose header declares at::<name>, or None."""
    if name in headers:
        return name
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in headers:
            return name[: -len(suffix)]
    return None


def calls(body: str, headers: Container[str]) -> list[Call]:
    """The operator calls of a C++ body, in order (each occurrence)."""
    blank = _SKIPPED.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), body)
    found = []
    for m in _CALL.finditer(blank):
        op = operator_of(m.group(1), headers)
        if op is not None:
            line = blank.count("\n", 0, m.start())
            found.append(Call(op, f"at::{m.group(1)}", line))
    return found


def uses_problem(
    body: str, uses: tuple[str, ...], headers: Container[str], first_line: int
) -> str | None:
    """What is wrong with `uses` for this body, or None: the operators it
    calls that `uses` lacks (with the spec line of their first call: the
    body's first line is first_line), else the entries it does not call."""
    found = calls(body, headers)
    listed = set(uses)
    wanted = sorted({c.operator for c in found})
    lacking = [op for op in wanted if op not in listed]
    fixed = ", ".join(sorted(listed | set(wanted)))
    if lacking:
        first = {}
        for c in found:
            first.setdefault(c.operator, c)
        named = " and ".join(
            f"{first[op].spelled} (line {first_line + first[op].line})"
            for op in lacking
        )
        entries = ", ".join(lacking)
        if not uses:
            return (
                f"the body calls {named}: list the operators whose headers "
                f"it needs in 'uses' (uses: [{fixed}])"
            )
        it = "it" if len(lacking) == 1 else "them"
        return (
            f"the body calls {named}, but 'uses' does not list {entries}: "
            f"add {it} (uses: [{fixed}])"
        )
    unused = [u for u in dict.fromkeys(uses) if u not in wanted]
    if unused:
        entries = ", ".join(unused)
        kept = ", ".join(u for u in dict.fromkeys(uses) if u in wanted)
        it = "it" if len(unused) == 1 else "them"
        fix = f"uses: [{kept}]" if kept else "and 'uses' with it"
        return (
            f"'uses' lists {entries}, which the body does not call "
            f"(as at::{unused[0]}(...) or at::{unused[0]}_out(...)): remove "
            f"{it} ({fix})"
        )
    return None
