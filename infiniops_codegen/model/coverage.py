"""The coverage matrix of `infiniops-codegen list`: op x platform -> native
kernel, torch fallback or missing, read from a manifest (no build needed).

A manifest is `generated/manifest.json` (the committed default set) or the
`manifest.json` a build directory holds, read by `manifest.py`. Pure
functions: a typed manifest in, rows and text out.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import NamedTuple

from .manifest import Manifest, Op

NATIVE = "native"
TORCH = "torch"
MISSING = "missing"
# The spec gives the op a native kernel whose source the project does not
# have yet (kernel_sources.py): a build stops before CMake configures.
NO_SOURCE = "no-source"
STATUSES = (NATIVE, TORCH, MISSING, NO_SOURCE)


def op_status(op: Op, platforms, unwritten=frozenset()) -> dict[str, str]:
    """platform -> native / torch / missing / no-source for one op. A native
    kernel wins: dispatch tries it first and falls back to torch. unwritten:
    (op name, platform) pairs whose kernel source does not exist."""
    impls = op.implementations

    def status(p: str) -> str:
        if p in impls.native:
            return NO_SOURCE if (op.name, p) in unwritten else NATIVE
        return TORCH if p in impls.torch else MISSING

    return {p: status(p) for p in platforms}


@dataclass(frozen=True)
class Matrix:
    platforms: tuple[str, ...]
    rows: tuple[tuple[str, dict[str, str]], ...]  # (op name, platform -> status)

    def counts(self) -> dict[str, dict[str, int]]:
        """platform -> status -> number of ops."""
        result = {p: {s: 0 for s in STATUSES} for p in self.platforms}
        for _, status in self.rows:
            for p, s in status.items():
                result[p][s] += 1
        return result


def native_platforms(manifest: Manifest) -> tuple[str, ...]:
    """The platforms any op of the manifest has a native kernel on."""
    used = {p for op in manifest.ops for p in op.implementations.native}
    return tuple(p for p in manifest.platforms if p in used)


def matrix(manifest: Manifest, platforms=None, unwritten=frozenset()) -> Matrix:
    """The rows of `platforms` (default: every platform of the manifest)."""
    shown = tuple(manifest.platforms if platforms is None else platforms)
    rows = tuple((op.name, op_status(op, shown, unwritten)) for op in manifest.ops)
    return Matrix(shown, rows)


def matrix_json(
    manifest: Manifest, source: str, platforms=None, unwritten=frozenset()
) -> dict:
    m = matrix(manifest, platforms, unwritten)
    return {
        "manifest": source,
        "selection": manifest.selection,
        "platforms": list(m.platforms),
        "ops": {name: status for name, status in m.rows},
        "counts": m.counts(),
    }


def matrix_table(
    manifest: Manifest,
    style=lambda text, status: text,
    platforms=None,
    unwritten=frozenset(),
) -> list[str]:
    """The matrix as aligned text lines; style(text, status) may colour a cell."""
    m = matrix(manifest, platforms, unwritten)
    name_width = max([len("op")] + [len(name) for name, _ in m.rows])
    widths = [
        max([len(p), len(MISSING)] + [len(status[p]) for _, status in m.rows])
        for p in m.platforms
    ]
    lines = [
        "  ".join(
            [f"{'op':<{name_width}}"]
            + [f"{p:<{w}}" for p, w in zip(m.platforms, widths)]
        ).rstrip()
    ]
    last = len(m.platforms) - 1
    for name, status in m.rows:
        cells = [
            style(status[p], status[p]) + " " * (w - len(status[p]) if k < last else 0)
            for k, (p, w) in enumerate(zip(m.platforms, widths))
        ]
        lines.append("  ".join([f"{name:<{name_width}}"] + cells))
    counts = m.counts()
    lines.append("")
    lines.append(f"{len(m.rows)} ops (native / torch fallback / missing per platform):")
    for p in m.platforms:
        c = counts[p]
        lines.append(
            f"  {p:<{max(widths, default=0)}}  {c[NATIVE]} native, {c[TORCH]} torch, "
            f"{c[MISSING]} missing"
            + (f", {c[NO_SOURCE]} without its kernel source" if c[NO_SOURCE] else "")
        )
    by_extension: dict[str, list[str]] = {}
    for op in manifest.ops:
        if op.extension:
            by_extension.setdefault(op.extension, []).append(op.name)
    for name, ops in sorted(by_extension.items()):
        lines.append(f"extension {name}: {len(ops)} ops ({', '.join(sorted(ops))})")
    return lines


def listed_platforms(
    manifest: Manifest, default, built=None, build_dir: str | None = None
) -> tuple[tuple[str, ...], str | None]:
    """The platforms `list` shows, and a line naming those it leaves out: a
    build directory's own (built, configured in build_dir), else the
    platforms a build has by default and those an op has a native kernel on
    (elsewhere every op takes the torch fallback)."""
    if built is not None:
        shown = tuple(p for p in manifest.platforms if p in built)
        why = f"{build_dir} was not configured for them"
    else:
        wanted = set(default) | set(native_platforms(manifest))
        shown = tuple(p for p in manifest.platforms if p in wanted)
        why = "no op has a native kernel there: the torch fallback where built"
    hidden = [p for p in manifest.platforms if p not in shown]
    if not hidden:
        return shown, None
    return shown, f"not shown: {', '.join(hidden)} ({why}; --platform all shows them)"


def not_found_hint(name: str, manifest: Manifest, aten_overloads=()) -> str:
    """Where an op the manifest lacks (and no name is close to) may be: ops
    whose name contains it, an ATen out= overload of that name the specs
    could add, else the commands that list both."""
    related = [n for n in manifest.names if name.lower() in n.lower()][:5]
    if related:
        return f"; ops whose name contains it: {', '.join(related)}"
    overloads = sorted(a for a in aten_overloads if a.split(".")[0] == name)
    if overloads:
        return (
            f"; ATen has {', '.join(overloads[:3])}: add it to the specs as "
            f"'- {overloads[0]}' (docs/adding-an-op.md)"
        )
    return (
        f"; 'infiniops-codegen list' shows the {len(manifest.names)} ops, "
        f"'list --available --match {name}' the ATen overloads the specs could add"
    )


def op_details(
    manifest: Manifest, name: str, platforms=None, unwritten=frozenset()
) -> dict:
    """One op: its Python signature (as the stub declares it), schema and
    implementations per platform; ManifestError for an unknown op."""
    op = manifest.op(name)
    impls = op.implementations
    shown = tuple(manifest.platforms if platforms is None else platforms)
    status = op_status(op, shown, unwritten)
    implementations = {
        p: [status[p]] * (status[p] in (NATIVE, NO_SOURCE))
        + [TORCH] * (p in impls.torch)
        for p in shown
    }
    return {
        "name": op.name,
        "aten": op.aten,
        "composite": op.composite,
        "source": op.source,
        "extension": op.extension or None,
        "schema": op.schema,
        "python": op.python_signature
        or "(not in this manifest: it predates signatures; regenerate it)",
        "outputs": list(op.outputs),
        "implementations": implementations,
        "native_dtypes": {p: list(d) for p, d in impls.native.items()},
        "native_up_to": {p: dict(d) for p, d in impls.native_up_to.items()},
        "direct_cpu": op.direct_cpu,
    }


def op_text(details: dict) -> list[str]:
    kind = "composite" if details["composite"] else f"ATen {details['aten']}"
    lines = [
        f"{details['name']}  ({kind}, from {details['source']}"
        + (f", extension {details['extension']})" if details.get("extension") else ")"),
        f"  python:  {details['python']}",
        f"  schema:  {details['schema']}",
        "  implementations:",
    ]
    width = max([len(p) for p in details["implementations"]] + [1])
    for p, names in details["implementations"].items():
        shown = []
        for n in names:
            dtypes = (
                details["native_dtypes"].get(p) if n in (NATIVE, NO_SOURCE) else None
            )
            limits = details.get("native_up_to", {}).get(p, {})
            if dtypes:
                dtypes = [
                    f"{d} up to {limits[d]} elements" if limits.get(d) else d
                    for d in dtypes
                ]
            shown.append(f"{n} ({', '.join(dtypes)})" if dtypes else n)
        lines.append(f"    {p:<{width}}  {', '.join(shown) or MISSING}")
    installed = details.get("installed_torch")
    if installed:  # the manifest's schema is not the installed torch's
        lines.append(
            f"  torch {installed['version']} (installed): "
            + (installed["schema"] or f"has no overload {details['aten']}")
        )
        lines += [f"    {change}" for change in installed["changes"]]
    return lines


# --- list --available ------------------------------------------------------


class Available(NamedTuple):
    """An ATen out= overload the generator can express and the specs lack."""

    aten: str  # what a spec line names, e.g. "hypot.out"
    name: str  # the module function it would be (resolve.default_name)
    schema: str


def available(ops) -> list[Available]:
    """The ops `--ops all` adds to the specs (model ops whose source is
    "<all>"), by overload name. Takes the model's ops (resolve.build_opset)."""
    return sorted(
        (Available(op.aten, op.name, op.schema) for op in ops if op.source == "<all>"),
        key=lambda a: a.aten,
    )


def matches(aten: str, pattern: str | None) -> bool:
    """--match: pattern is a substring of the overload name, or a glob when
    it has '*', '?' or '['; case-insensitive."""
    if pattern is None:
        return True
    name, pattern = aten.lower(), pattern.lower()
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern in name


def available_lines(rows: list[Available]) -> list[str]:
    """One line each: the overload name, then its schema's arguments and
    return (the schema without its leading name)."""
    width = min(max([len(r.aten) for r in rows] + [0]), 32)
    lines = []
    for r in rows:
        rest = (
            r.schema[len(r.aten) :] if r.schema.startswith(r.aten + "(") else r.schema
        )
        lines.append(f"{r.aten:<{width}}  {rest}")
    return lines
