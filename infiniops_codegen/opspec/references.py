"""A composite's `reference`: the Python expression the harness evaluates
with `torch` and the op's input arguments (by their schema names).

A typo in it (`torch.hypot(inpt, other)`) would otherwise surface only in
the harness, as a NameError on every sample, so the generator checks the
names the expression reads before anything is generated.
"""

from __future__ import annotations

import builtins
import difflib
import symtable

# What the harness puts in scope besides the arguments (harness/run.py).
GLOBALS = ("torch",)


def _read_names(table: symtable.SymbolTable) -> set[str]:
    """Names the expression (lambdas and comprehensions included) reads
    from outside itself."""
    names = set()
    for symbol in table.get_symbols():
        bound = symbol.is_assigned() or symbol.is_parameter() or symbol.is_imported()
        if symbol.is_referenced() and not bound and not symbol.is_free():
            names.add(symbol.get_name())
    for child in table.get_children():
        names |= _read_names(child)
    return names


def problem(expression: str, arguments: tuple[str, ...]) -> str | None:
    """Why the expression cannot run as a reference of an op with these input
    arguments (a syntax error, a name that is none of them, `torch` or a
    builtin); None when it can."""
    try:
        compile(expression, "<reference>", "eval")
        table = symtable.symtable(expression, "<reference>", "eval")
    except SyntaxError as e:
        return f"'reference' is no Python expression: {e.msg}"
    known = set(arguments) | set(GLOBALS)
    unknown = sorted(n for n in _read_names(table) - known if not hasattr(builtins, n))
    if not unknown:
        return None
    name = unknown[0]
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return (
        f"'reference' reads '{name}', which is none of the op's input arguments "
        f"({', '.join(arguments) or 'none'}) nor torch{hint}"
    )
