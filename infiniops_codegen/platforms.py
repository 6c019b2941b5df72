"""The platform table (data/platforms.yaml)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from .model import KernelToolchain, Platform, StreamSupport

PLATFORMS_FILE = Path(__file__).parent / "data" / "platforms.yaml"
KERNEL_LANGUAGES = ("CXX", "CUDA", "VENDORCXX")


def _platform(entry: dict) -> Platform:
    stream = entry.get("stream")
    kernels = entry["kernels"]
    if kernels["language"] not in KERNEL_LANGUAGES:
        raise ValueError(
            f"{PLATFORMS_FILE}: {entry['name']}: kernel language "
            f"{kernels['language']!r} is not one of {', '.join(KERNEL_LANGUAGES)}"
        )
    return Platform(
        name=entry["name"],
        flag=entry["flag"],
        device_type=entry["device_type"],
        torch_device=entry["torch"]["device"],
        c10_type=entry["torch"]["c10_type"],
        stream=(
            StreamSupport(
                headers=tuple(stream["headers"]),
                type=stream["type"],
                guard=stream["guard"],
                external=stream["external"],
                current=stream["current"],
                py_attr=stream["py_attr"],
            )
            if stream
            else None
        ),
        kernels=KernelToolchain(
            compiler=kernels["compiler"],
            language=kernels["language"],
            extensions=tuple(kernels["extensions"]),
            flags=tuple(kernels.get("flags") or ()),
        ),
        host_compiled_bridge=bool(entry.get("host_compiled_bridge", False)),
        torch_libraries=tuple(entry.get("torch_libraries") or ()),
        default=bool(entry.get("default", False)),
        upstream=bool(entry["torch"].get("upstream", False)),
    )


def _check(platforms: tuple[Platform, ...]) -> None:
    """Names, flags and enumerators each once; at most one upstream platform
    per c10 device type."""
    for what in ("name", "flag", "device_type"):
        values = [getattr(p, what) for p in platforms]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(
                f"{PLATFORMS_FILE}: {what} repeated: {', '.join(repeated)}"
            )
    upstream: dict[str, str] = {}
    for p in platforms:
        if p.upstream and p.c10_type in upstream:
            raise ValueError(
                f"{PLATFORMS_FILE}: {upstream[p.c10_type]} and {p.name} are both "
                f"upstream for c10 device type {p.c10_type}"
            )
        if p.upstream:
            upstream[p.c10_type] = p.name


@lru_cache(maxsize=1)
def load_platforms() -> tuple[Platform, ...]:
    data = yaml.safe_load(PLATFORMS_FILE.read_text())
    platforms = tuple(_platform(entry) for entry in data["platforms"])
    _check(platforms)
    return platforms


def platform_names() -> tuple[str, ...]:
    return tuple(p.name for p in load_platforms())


def parse_platforms(text: str) -> tuple[Platform, ...]:
    """`--platform cpu,nvidia` -> those platforms, in table order.
    ValueError naming the known ones for an unknown name or an empty list."""
    by_name = {p.name: p for p in load_platforms()}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        what = f"unknown platform {', '.join(unknown)}" if unknown else "no platform"
        raise ValueError(f"{what}; choose from {', '.join(by_name)}")
    return tuple(p for p in load_platforms() if p.name in names)
