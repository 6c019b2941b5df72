"""Skips for missing tools, read from the `environment:` section of
tests/skips.yaml (the one list of skips, each with its reason):
`requires("nvcc")` is a pytest mark that skips only where that tool is not
on PATH."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

SKIPS_FILE = Path(__file__).resolve().parent / "skips.yaml"


def load_entries(path: Path = SKIPS_FILE) -> dict[str, dict]:
    entries = {}
    for entry in (yaml.safe_load(path.read_text()) or {}).get("environment") or []:
        if not entry.get("name") or not entry.get("tool") or not entry.get("reason"):
            raise ValueError(
                f"{path}: every entry needs name, tool and reason: {entry}"
            )
        entries[entry["name"]] = entry
    return entries


def requires(name: str) -> pytest.MarkDecorator:
    entry = load_entries()[name]  # KeyError: add the entry, with its reason
    missing = shutil.which(entry["tool"]) is None
    return pytest.mark.skipif(missing, reason=entry["reason"])
