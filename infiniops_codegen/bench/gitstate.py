"""The git state a bench run is measured on: the commit, and whether the
tree differs from it (recorded in bench.json; docs/perf/ is only written from
an unmodified tree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

# Untracked files count as a modification only where a build reads them.
BUILD_INPUTS = (
    "cpp/",
    "op_specs/",
    "generated/",
    "infiniops_codegen/",
    "pyproject.toml",
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def changes(porcelain: str, ignore: set[str]) -> list[str]:
    """Paths that make the tree differ from its commit, from `git status
    --porcelain=v1 -uall` output: every tracked change, untracked files under
    BUILD_INPUTS; paths in ignore (the bench's own output files) excepted."""
    result = []
    for line in porcelain.splitlines():
        if len(line) < 4:
            continue
        status, path = line[:2], line[3:]
        if " -> " in path:  # a rename: the new name
            path = path.split(" -> ", 1)[1]
        path = path.strip('"')
        if path in ignore:
            continue
        if status == "??" and not path.startswith(BUILD_INPUTS):
            continue
        result.append(path)
    return result


def state(repo: Path, ignore: list[Path] = ()) -> dict:
    """{"commit", "modified", "changes"}; commit "unknown" outside git."""
    rel = set()
    for p in ignore:
        try:
            rel.add(str(Path(p).resolve().relative_to(repo.resolve())))
        except ValueError:
            pass
    try:
        commit = _git(repo, "rev-parse", "HEAD").strip()
        found = changes(_git(repo, "status", "--porcelain=v1", "-uall"), rel)
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "modified": True, "changes": ["(not a git tree)"]}
    return {"commit": commit, "modified": bool(found), "changes": found}
