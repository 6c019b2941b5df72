"""Skips for what a machine or a run lacks, read from the `environment:`
section of tests/skips.yaml (the one list of skips, each with its reason):
`requires("nvcc")` is a pytest mark that skips only where that entry's tool
is not on PATH, where its environment variable is not set, or where its
Python module cannot be found."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest
import yaml

SKIPS_FILE = Path(__file__).resolve().parent / "skips.yaml"


def load_entries(path: Path = SKIPS_FILE) -> dict[str, dict]:
    entries = {}
    for entry in (yaml.safe_load(path.read_text()) or {}).get("environment") or []:
        what = [k for k in ("tool", "variable", "module") if entry.get(k)]
        if not entry.get("name") or len(what) != 1 or not entry.get("reason"):
            raise ValueError(
                f"{path}: every entry needs name, reason, and one of tool,"
                f" variable and module: {entry}"
            )
        entries[entry["name"]] = entry
    return entries


def requires(name: str) -> pytest.MarkDecorator:
    entry = load_entries()[name]  # KeyError: add the entry, with its reason
    if entry.get("tool"):
        missing = shutil.which(entry["tool"]) is None
    elif entry.get("module"):
        missing = importlib.util.find_spec(entry["module"]) is None
    else:
        missing = not os.environ.get(entry["variable"])
    return pytest.mark.skipif(missing, reason=entry["reason"])
