"""The native kernel sources a project's specs ask for.

A spec that gives an op a native kernel on a platform needs the source
`<kernels>/<platform>/<op>.<ext>` (an extension of the platform's in
data/platforms.yaml), which support/CMakeLists.txt looks for at configure.
`generate` warns and `list` marks the ones not written yet, so the gap shows
before a build fails on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .platforms import load_platforms


@dataclass(frozen=True)
class Missing:
    op: str
    platform: str
    source: Path  # the source to write, with the platform's first extension
    extensions: tuple[str, ...]  # every extension the build accepts

    def shown(self, rel=str) -> str:
        """'cpp/kernels/cpu/foo.cc' (or '.../foo.{cc,cpp}' where the platform
        takes several), the directory through rel (a project's rel)."""
        where = f"{rel(self.source.parent)}/{self.op}"
        if len(self.extensions) == 1:
            return f"{where}.{self.extensions[0]}"
        return f"{where}.{{{','.join(self.extensions)}}}"


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
