"""The native kernel sources a project's specs ask for.

A spec that gives an op a native kernel on a platform needs the source
`<kernels>/<platform>/<op>.<ext>` (an extension of the platform's in
data/platforms.yaml), which support/CMakeLists.txt looks for at configure.
`generate` warns and `list` marks the ones not written yet, so the gap shows
before a build fails on it; `build` and a project's wheel (its CMake
configure step) stop on them before CMake or Ninja runs (unbuildable): one
check for both, whose message names the op, the platform, the file and the
spec line to change, where CMake's own check (or Ninja re-running CMake in a
directory that built before) said less.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import SpecError
from ..base.platforms import load_platforms


@dataclass(frozen=True)
class Missing:
    op: str
    platform: str
    source: Path  # the source to write, with the platform's first extension
    extensions: tuple[str, ...]  # every extension the build accepts

    def shown(self, rel=str) -> str:
        """'cpp/kernels/cpu/foo.cc' (or 'cpp/kernels/cpu/foo.cc (or .cpp)'
        where the platform takes several), the directory through rel (a
        project's rel)."""
        where = f"{rel(self.source.parent)}/{self.op}.{self.extensions[0]}"
        others = " or ".join(f".{e}" for e in self.extensions[1:])
        return f"{where} (or {others})" if others else where


def missing(
    kernels: Path, natives: Iterable[tuple[str, Iterable[str]]]
) -> list[Missing]:
    """The kernel sources absent under `kernels` (the project's kernel root)
    for (op name, platforms with a native kernel) pairs, in their order."""
    extensions = {p.name: p.kernels.extensions for p in load_platforms()}
    result = []
    for op, platforms in natives:
        for platform in platforms:
            exts = extensions.get(platform, ())
            directory = Path(kernels) / platform
            if exts and not any((directory / f"{op}.{e}").is_file() for e in exts):
                result.append(
                    Missing(op, platform, directory / f"{op}.{exts[0]}", exts)
                )
    return result


def unbuildable(
    opset, platforms: Iterable[str], roots: dict[str, Path], rel=str
) -> list[str]:
    """One line per native kernel of opset's ops on `platforms` (the build's)
    whose source does not exist under its root (roots: the project's kernel
    root under "", each extension's under its name), located at the op's
    `native:` in its spec: what to write where, or what to remove."""
    wanted = set(platforms)
    lines = []
    for owner, root in roots.items():
        ops = {op.name: op for op in opset.ops if op.extension == owner}
        natives = (
            (op.name, [n.platform for n in op.native if n.platform in wanted])
            for op in ops.values()
            if op.native
        )
        for m in missing(root, natives):
            op = ops[m.op]
            message = (
                f"{m.op} has a native {m.platform} kernel, but its source "
                f"{m.shown(rel)} does not exist: write it "
                f"(docs/adding-an-op.md), or remove {m.platform} from "
                f"{m.op}'s 'native' to build the op without it"
            )
            line, col = op.native_line or 1, op.native_col or 1
            lines.append(str(SpecError(op.source, line, col, message)))
    return lines
