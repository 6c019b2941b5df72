"""Schema drift: where the installed torch's ATen facts differ from those a
generated directory was made from, by overload, in words.

Both sides are manifests (render.manifest_data's shape): the one on disk and
the one just rendered. Only facts that come from torch are compared (an op's
schema, its C++ call, kernels, tags, torch's Python signatures, which
overloads exist); what the specs decide (names, hints, native kernels, which
ops a spec lists) is not drift. So an empty result means the differences, if
any, come from the specs or the tool, and a non-empty one names what the
release changed: `generate --check` prints it, and `build` then generates
into the build directory instead of touching the committed sources.

Standard library only (manifests are JSON).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..base.locations import MANIFEST

ALL = "<all>"  # the source of the ops `--ops all` adds (model/resolve.py)


@dataclass(frozen=True)
class Change:
    overload: str  # "_cdist_backward.out"; "torch.all" for a Python function
    what: str  # "argument 'grad' is named 'grad_output'"


def between(directory: Path, files: dict[str, str]) -> list[Change]:
    """The drift from the manifest in directory to the rendered `files`;
    [] when directory holds no readable manifest."""
    try:
        old = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
        new = json.loads(files[MANIFEST])
    except (OSError, KeyError, ValueError):
        return []
    if not isinstance(old, dict) or not isinstance(old.get("ops"), list):
        return []
    return changes(old, new)


def changes(old: dict, new: dict) -> list[Change]:
    """What the release changed between two manifests, overload by overload."""
    result: list[Change] = []
    before, after = _by_key(old), _by_key(new)
    for key in sorted(before.keys() | after.keys()):
        o, n = before.get(key), after.get(key)
        if o is not None and n is not None:
            result += [Change(key, what) for what in op_changes(o, n)]
        elif n is not None and n.get("source") == ALL:
            result.append(Change(key, "new out= overload in torch"))
        elif o is not None and o.get("source") == ALL:
            excluded = _exclusions(new).get(key)
            result.append(
                Change(key, f"not expressible any more: {excluded}")
                if excluded
                else Change(key, "gone from torch")
            )
    if old.get("selection") == new.get("selection") == "all":
        excluded_old, excluded_new = _exclusions(old), _exclusions(new)
        for key in sorted(excluded_new.keys() - excluded_old.keys() - before.keys()):
            result.append(Change(key, "new out= overload in torch, not expressible"))
        for key in sorted(excluded_old.keys() - excluded_new.keys() - after.keys()):
            result.append(Change(key, "gone from torch"))
    result += _function_changes(old.get("functions") or {}, new.get("functions") or {})
    return result


def _by_key(manifest: dict) -> dict[str, dict]:
    """ATen ops by overload, composites by name."""
    return {
        op.get("aten") or op.get("name", ""): op
        for op in manifest.get("ops", [])
        if isinstance(op, dict)
    }


def _exclusions(manifest: dict) -> dict[str, str]:
    return {
        e["aten"]: e.get("reason", "")
        for e in manifest.get("exclusions") or []
        if isinstance(e, dict) and "aten" in e
    }


# The facts of one op that come from torchgen, besides its schema and its
# arguments' C++ types, with what each is called.
_FACTS = (
    ("cpp_function", "C++ function"),
    ("functional", "functional overload"),
    ("return_type", "torch.return_types of its outputs"),
    ("cpu_kernel", "CPU kernel entry (at::cpu::)"),
    ("tensor_iterator", "TensorIterator kernel"),
)


def op_changes(old: dict, new: dict) -> list[str]:
    """What differs between two manifest entries of one overload."""
    if old.get("composite") and old.get("schema") != new.get("schema"):
        return []  # a composite's schema is its spec's: an edit, not drift
    found = schema_changes(old.get("schema", ""), new.get("schema", ""))
    cpp_old = {a.get("name"): a.get("cpp_type") for a in old.get("arguments", [])}
    for a in new.get("arguments", []):
        was = cpp_old.get(a.get("name"))
        if was is not None and a.get("cpp_type") not in (None, was):
            found.append(
                f"C++ type of '{a['name']}' is '{a['cpp_type']}' (was '{was}')"
            )
    for key, what in _FACTS:
        if key in old and key in new and old[key] != new[key]:
            found.append(f"{what}: {_shown(new[key])} (was {_shown(old[key])})")
    found += _functional_call_changes(old, new)
    tags_old, tags_new = set(old.get("tags") or ()), set(new.get("tags") or ())
    found += [f"{_NEW_TAG}'{t}'" for t in sorted(tags_new - tags_old)]
    found += [f"{_NO_TAG}'{t}' any more" for t in sorted(tags_old - tags_new)]
    return found


_NEW_TAG, _NO_TAG = "new tag ", "no tag "


def tags_only(change: Change) -> bool:
    """A change of the op's ATen tags alone: data its registration lists,
    the same code whatever they are (2.11 has no `out` tag on any out=
    overload)."""
    return change.what.startswith((_NEW_TAG, _NO_TAG))


def _functional_call_changes(old: dict, new: dict) -> list[str]:
    if "functional_call" not in old or "functional_call" not in new:
        return []  # a manifest older than the key
    o, n = old["functional_call"], new["functional_call"]
    if o == n:
        return []
    if not o or not n:
        has = "has" if n else "has no"
        return [
            f"a call without out= {has} a functional form to run (was the other way)"
        ]
    said = {
        "cpp_name": "its functional form's C++ function",
        "cpu_kernel": "its functional form's CPU kernel entry",
        "meta_kernel": "its functional form's meta kernel",
        "return_type": "its functional form's return type",
    }
    return [
        f"{what}: {_shown(n.get(k))} (was {_shown(o.get(k))})"
        for k, what in said.items()
        if o.get(k) != n.get(k)
    ]


def _shown(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "none"
    return "none" if value is None else str(value)


def _function_changes(old: dict, new: dict) -> list[Change]:
    """torch's Python signatures of the functions both manifests serve."""
    result = []
    for name in sorted(old.keys() & new.keys()):
        before = [(s.get("signature"), s.get("aten")) for s in old[name]]
        after = [(s.get("signature"), s.get("aten")) for s in new[name]]
        if before == after:
            continue
        for sig, aten in after:
            if (sig, aten) not in before:
                result.append(Change(f"torch.{name}", f"new Python signature {sig}"))
        for sig, aten in before:
            if (sig, aten) not in after:
                result.append(
                    Change(f"torch.{name}", f"no Python signature {sig} any more")
                )
        if sorted(before) == sorted(after):
            result.append(
                Change(
                    f"torch.{name}", "its Python signatures are tried in another order"
                )
            )
    return result  # fmt: skip


# -- schemas ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arg:
    type: str
    name: str
    default: str | None
    keyword_only: bool

    def __str__(self) -> str:
        return f"{self.type} {self.name}" + (
            f"={self.default}" if self.default is not None else ""
        )


def parse_schema(text: str) -> tuple[list[_Arg], str] | None:
    """A schema's arguments and returns (`name(args) -> returns`); None when
    the text is not one."""
    open_at = text.find("(")
    close_at = _matching(text, open_at) if open_at >= 0 else -1
    if close_at < 0:
        return None
    args, keyword_only = [], False
    for part in _split(text[open_at + 1 : close_at]):
        if part == "*":
            keyword_only = True
            continue
        type_, _, rest = part.partition(" ")
        name, eq, default = rest.partition("=")
        args.append(_Arg(type_, name.strip(), default if eq else None, keyword_only))
    return args, text[close_at + 1 :].strip().removeprefix("->").strip()


def _matching(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([":
            depth += 1
        elif text[i] in ")]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split(text: str) -> list[str]:
    """Top-level comma-separated parts (defaults hold lists and strings)."""
    parts, depth, quote, start = [], 0, None, 0
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text.strip():
        parts.append(text[start:].strip())
    return parts


def schema_changes(old: str, new: str) -> list[str]:
    """What differs between two schemas of one overload, argument by
    argument: renames, types, defaults, arguments added or gone, returns."""
    if old == new:
        return []
    a, b = parse_schema(old), parse_schema(new)
    if a is None or b is None:
        return [f"schema {new} (was {old})"]
    (args_a, returns_a), (args_b, returns_b) = a, b
    found = []
    same_shape = len(args_a) == len(args_b) and all(
        x.keyword_only == y.keyword_only for x, y in zip(args_a, args_b)
    )
    if same_shape:
        pairs = list(zip(args_a, args_b))
    else:
        names_b = {y.name for y in args_b}
        names_a = {x.name for x in args_a}
        pairs = [(x, y) for x in args_a for y in args_b if x.name == y.name]
        found += [f"new argument '{y}'" for y in args_b if y.name not in names_a]
        found += [
            f"no argument '{x}' any more" for x in args_a if x.name not in names_b
        ]
        if [x.name for x in args_a if x.name in names_b] != [
            y.name for y in args_b if y.name in names_a
        ]:
            found.append("the arguments are in another order")
    for x, y in pairs:
        if x.name != y.name:
            found.append(f"argument '{x.name}' is named '{y.name}'")
        if x.type != y.type:
            found.append(f"argument '{y.name}' is a '{y.type}' (was '{x.type}')")
        if x.default != y.default:
            now = (
                f"defaults to {y.default}"
                if y.default is not None
                else "has no default"
            )
            was = x.default if x.default is not None else "none"
            found.append(f"argument '{y.name}' {now} (was {was})")
        if x.keyword_only != y.keyword_only:
            kind = "keyword-only" if y.keyword_only else "positional"
            found.append(f"argument '{y.name}' is {kind} now")
    if returns_a != returns_b:
        found.append(f"returns {returns_b} (was {returns_a})")
    return found or [f"schema {new} (was {old})"]


# -- for people ----------------------------------------------------------------------


def overloads(found: list[Change]) -> list[str]:
    """The overloads (and torch functions) the changes name, each once."""
    return list(dict.fromkeys(c.overload for c in found))


def counted(found: list[Change]) -> str:
    """`3 overloads and 2 of torch's Python functions`: what the changes name."""
    names = overloads(found)
    functions = sum(1 for n in names if n.startswith("torch."))
    parts = []
    if len(names) > functions:
        n = len(names) - functions
        parts.append(f"{n} overload" + ("s" if n != 1 else ""))
    if functions:
        parts.append(f"{functions} of torch's Python functions")
    return " and ".join(parts)


def lines(found: list[Change], limit: int | None = None) -> list[str]:
    """One line per change, a change that several overloads share once with
    them all; at most `limit` lines (then a line saying how many more) and
    a few of a group's overloads (limit None: every line and overload)."""
    groups: dict[str, list[str]] = {}
    for c in found:
        groups.setdefault(c.what, []).append(c.overload)
    few = 4 if limit is not None else None
    result = []
    for what, names in groups.items():
        if len(names) == 1:
            result.append(f"{names[0]}: {what}")
        else:
            shown = ", ".join(names[:few])
            more = f" and {len(names) - 4} more" if few and len(names) > few else ""
            result.append(f"{what}: {len(names)} overloads ({shown}{more})")
    if limit is not None and len(result) > limit:
        cut = len(result) - limit
        result = result[:limit] + [f"... {cut} more (-v shows them all)"]
    return result
