"""The platform table (data/platforms.yaml)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from .model import Platform

PLATFORMS_FILE = Path(__file__).parent / "data" / "platforms.yaml"


@lru_cache(maxsize=1)
def load_platforms() -> tuple[Platform, ...]:
    data = yaml.safe_load(PLATFORMS_FILE.read_text())
    return tuple(Platform(**entry) for entry in data["platforms"])


def platform_names() -> tuple[str, ...]:
    return tuple(p.name for p in load_platforms())
