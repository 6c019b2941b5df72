"""The coverage matrix of `infiniops-codegen list`: op x platform -> native
kernel, torch fallback or missing, read from a manifest (no build needed).

A manifest is `generated/manifest.json` (the committed default set) or the
`manifest.json` a build directory holds. Pure functions: manifest data in,
rows and text out.
"""

from __future__ import annotations

import ast
import difflib
import json
from dataclasses import dataclass
from pathlib import Path

NATIVE = "native"
TORCH = "torch"
MISSING = "missing"
STATUSES = (NATIVE, TORCH, MISSING)


class ManifestError(Exception):
    """The manifest cannot be read or an op is unknown; the message says why."""


def read_manifest(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(
            f"{path}: no manifest; run 'infiniops-codegen generate' (or build)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"{path}: cannot read the manifest: {e}") from None
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{path}:{e.lineno}:{e.colno}: not a valid manifest: {e.msg}"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("ops"), list):
        raise ManifestError(f"{path}: not an infiniops-codegen manifest (no 'ops')")
    return data


def _platform_set(value, platforms: list[str]) -> set[str]:
    """'all', a list of platform names or a mapping keyed by them."""
    if value == "all":
        return set(platforms)
    if isinstance(value, (list, tuple, dict)):
        return set(value)
    return set()


def op_status(op: dict, platforms: list[str]) -> dict[str, str]:
    """platform -> native / torch / missing for one manifest op. A native
    kernel wins: dispatch tries it first and falls back to torch."""
    impls = op.get("implementations", {})
    native = _platform_set(impls.get("native", {}), platforms)
    torch = _platform_set(impls.get("torch", "all"), platforms)
    return {
        p: NATIVE if p in native else TORCH if p in torch else MISSING
        for p in platforms
    }


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


def matrix(manifest: dict) -> Matrix:
    platforms = list(manifest.get("platforms") or [])
    rows = tuple(
        (op["name"], op_status(op, platforms))
        for op in sorted(manifest["ops"], key=lambda o: o["name"])
    )
    return Matrix(tuple(platforms), rows)


def matrix_json(manifest: dict, source: str) -> dict:
    m = matrix(manifest)
    return {
        "manifest": source,
        "torch_version": manifest.get("torch_version"),
        "selection": manifest.get("selection"),
        "platforms": list(m.platforms),
        "ops": {name: status for name, status in m.rows},
        "counts": m.counts(),
    }


def matrix_table(manifest: dict, style=lambda text, status: text) -> list[str]:
    """The matrix as aligned text lines; style(text, status) may colour a cell."""
    m = matrix(manifest)
    name_width = max([len("op")] + [len(name) for name, _ in m.rows])
    widths = [max(len(p), len(MISSING)) for p in m.platforms]
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
            f"  {p:<{max(widths)}}  {c[NATIVE]} native, {c[TORCH]} torch, "
            f"{c[MISSING]} missing"
        )
    return lines


def find_op(manifest: dict, name: str) -> dict:
    """The manifest entry of an op by public name (or ATen overload)."""
    for op in manifest["ops"]:
        if op["name"] == name or op.get("aten") == name:
            return op
    names = [op["name"] for op in manifest["ops"]]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ManifestError(f"no op '{name}' in the manifest{hint}")


def _format_args(args: ast.arguments) -> str:
    """Parameters as the stub writes them: `name: type = default`."""

    def one(arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg
        if arg.annotation is not None:
            text += f": {ast.unparse(arg.annotation)}"
        if default is not None:
            text += f" = {ast.unparse(default)}"
        return text

    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [one(a, d) for a, d in zip(positional, defaults)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.kwonlyargs:
        parts.append("*")
        parts += [one(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return ", ".join(parts)


def stub_signatures(
    manifest_path: Path, fallback_dir: Path | None = None
) -> dict[str, str]:
    """op name -> Python signature, from the .pyi stub generated next to the
    manifest (in its directory or its generated/ subdirectory), else from
    fallback_dir; {} when there is none."""
    candidates = [
        manifest_path.parent / "infiniops.pyi",
        manifest_path.parent / "generated" / "infiniops.pyi",
    ]
    if fallback_dir is not None:
        candidates.append(fallback_dir / "infiniops.pyi")
    for stub in candidates:
        try:
            tree = ast.parse(stub.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        return {
            fn.name: f"{fn.name}({_format_args(fn.args)}) -> {ast.unparse(fn.returns)}"
            for fn in tree.body
            if isinstance(fn, ast.FunctionDef) and fn.returns is not None
        }
    return {}


def op_details(manifest: dict, name: str, stub: dict[str, str] | None = None) -> dict:
    op = find_op(manifest, name)
    platforms = list(manifest.get("platforms") or [])
    native = op.get("implementations", {}).get("native", {})
    status = op_status(op, platforms)
    impls = {}
    for p in platforms:
        names = []
        if status[p] == NATIVE:
            names.append(NATIVE)
        if p in _platform_set(
            op.get("implementations", {}).get("torch", "all"), platforms
        ):
            names.append(TORCH)
        impls[p] = names
    return {
        "name": op["name"],
        "aten": op.get("aten"),
        "composite": op.get("composite", False),
        "source": op.get("source"),
        "schema": op.get("schema"),
        "python": (stub or {}).get(op["name"])
        or "(no infiniops.pyi beside the manifest: `generate` writes one)",
        "outputs": op.get("outputs", []),
        "implementations": impls,
        "native_dtypes": {
            p: list(d) for p, d in (native.items() if isinstance(native, dict) else [])
        },
        "native_up_to": (op.get("implementations") or {}).get("native_up_to", {}),
        "direct_cpu": op.get("direct_cpu"),
    }


def op_text(details: dict) -> list[str]:
    kind = "composite" if details["composite"] else f"ATen {details['aten']}"
    lines = [
        f"{details['name']}  ({kind}, from {details['source']})",
        f"  python:  {details['python']}",
        f"  schema:  {details['schema']}",
        "  implementations:",
    ]
    width = max([len(p) for p in details["implementations"]] + [1])
    for p, names in details["implementations"].items():
        shown = []
        for n in names:
            dtypes = details["native_dtypes"].get(p) if n == NATIVE else None
            limits = details.get("native_up_to", {}).get(p, {})
            if dtypes:
                dtypes = [
                    f"{d} up to {limits[d]} elements" if limits.get(d) else d
                    for d in dtypes
                ]
            shown.append(f"{n} ({', '.join(dtypes)})" if dtypes else n)
        lines.append(f"    {p:<{width}}  {', '.join(shown) or MISSING}")
    return lines
