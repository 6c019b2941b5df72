"""A failed link step, said so that the fix is clear.

The linker's own last line, `collect2: error: ld returned 1 exit status`, is
all the compile-error report would show. What matters is above it: the
symbols it did not find. A native kernel whose signature differs from its
declaration in the generated native_kernels.h compiles (it declares an
overload) and leaves the declared function undefined; that case names the
declaration, the signature it must have and what the kernel defines.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..base.platforms import load_platforms

# GNU ld: undefined reference to `sym' (or ‘sym’ in a UTF-8 locale); lld:
# undefined symbol: sym
_UNDEFINED = re.compile(
    r"undefined reference to [`‘'](?P<ld>.+?)['’]\s*$|undefined symbol: (?P<lld>.+?)\s*$"
)
_KERNEL = re.compile(r"^infini::ops::native::(\w+)::(\w+)\(")
NATIVE_HEADER = "native_kernels.h"
SHOWN = 5  # undefined symbols shown of a step (the rest counted)


def undefined(lines: list[str]) -> list[str]:
    """The symbols a link step did not find, each once, in order."""
    found: list[str] = []
    for line in lines:
        m = _UNDEFINED.search(line)
        symbol = m and (m.group("ld") or m.group("lld"))
        if symbol and symbol not in found:
            found.append(symbol)
    return found


def _declaration(header: Path, platform: str, op: str) -> tuple[int, str] | None:
    """(line, text) of `KernelResult op(...)` in the platform's namespace block."""
    try:
        lines = header.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    inside = False
    for number, line in enumerate(lines, 1):
        if line.startswith(f"namespace infini::ops::native::{platform} "):
            inside = True
        elif line.startswith("}  // namespace"):
            inside = False
        elif inside and line.startswith(f"KernelResult {op}("):
            return number, line.strip()
    return None


def _definition(source: Path, op: str) -> tuple[int, str] | None:
    """(line, signature) of the first `KernelResult op(...)` the kernel source
    has (or `bool op(...)`, the return type of kernels before KernelResult),
    its parameters joined onto one line."""
    try:
        text = source.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(rf"\b(?:KernelResult|bool)\s+{re.escape(op)}\s*\(", text)
    if m is None:
        return None
    depth, end = 0, m.end() - 1
    for end in range(m.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            break
    signature = " ".join(text[m.start() : end + 1].split())
    return text.count("\n", 0, m.start()) + 1, signature


def _kernel_source(dirs: list[Path], platform: str, op: str) -> Path | None:
    extensions = {p.name: p.kernels.extensions for p in load_platforms()}
    for directory in dirs:
        for ext in extensions.get(platform, ()):
            path = Path(directory) / platform / f"{op}.{ext}"
            if path.is_file():
                return path
    return None


def _kernel_lines(
    symbol: str, generated: Path, kernel_dirs: list[Path], rel
) -> list[str]:
    """What to do about an undefined native kernel, or [] for another symbol."""
    m = _KERNEL.match(symbol)
    if m is None:
        return []
    platform, op = m.groups()
    header = Path(generated) / NATIVE_HEADER
    declared = _declaration(header, platform, op)
    if declared is None:
        return []
    line, text = declared
    lines = [
        f"the {platform} kernel of {op} must define the function its declaration "
        f"names ({rel(header)}:{line}, in namespace infini::ops::native::{platform}), "
        "with the same parameter types, const and & (the names may differ):",
        f"  {text}",
    ]
    source = _kernel_source(kernel_dirs, platform, op)
    defined = _definition(source, op) if source is not None else None
    if defined is not None:
        lines.append(f"{rel(source)}:{defined[0]} defines another one: {defined[1]}")
    elif source is not None:
        lines.append(f"{rel(source)} defines no function '{op}'")
    return lines


def _other_link_error(target: str, block: list[str]) -> str | None:
    """A link step that failed for another reason (a multiple definition, a
    missing library): what the linker said (Ninja's block: the FAILED line,
    the command, then the output), before collect2's summary."""
    if not any("collect2: error" in l or "ld.lld: error" in l for l in block):
        return None
    said = [
        l
        for l in block[2:]
        if l.strip() and "in function" not in l and not l.startswith("ninja: ")
    ]
    said = [l for l in said if not l.startswith("collect2:")] or said
    return f"{target} failed to link:\n" + "\n".join(said[:SHOWN])


def explain(
    target: str, block: list[str], generated: Path, kernel_dirs: list[Path], rel=str
) -> str | None:
    """The report of a failed link step (Ninja's block of output from its
    FAILED line), or None when the block is no link failure."""
    symbols = undefined(block)
    if not symbols:
        return _other_link_error(target, block)
    lines = [f"{target} failed to link:"]
    for symbol in symbols[:SHOWN]:
        lines.append(f"undefined reference to `{symbol}'")
        lines += _kernel_lines(symbol, generated, kernel_dirs, rel)
    if len(symbols) > SHOWN:
        lines.append(f"... and {len(symbols) - SHOWN} more undefined symbols")
    return "\n".join(lines)
