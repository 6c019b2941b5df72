"""The dtype table (data/dtypes.yaml): the one list of element types.

A leaf module (it imports nothing of the package), so that the model can
refer to it without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import yaml

from .locations import DATA_DIR

DTYPES_FILE = DATA_DIR / "dtypes.yaml"
KINDS = ("bool", "integral", "floating", "complex")
SIZES = (1, 2, 4, 8, 16)
FIELDS = ("name", "enumerator", "c10", "size", "kind", "spec")


@dataclass(frozen=True)
class DType:
    """One element type: its names in the core, c10, PyTorch and specs."""

    name: str  # torch.<name>; also the spec name and to_string()
    enumerator: str  # core DataType enumerator, "kFloat32"
    c10: str  # c10::ScalarType enumerator, "Float"
    size: int  # bytes per element
    kind: str  # one of KINDS
    spec: bool  # native kernel specs may name it


def _dtype(entry: dict) -> DType:
    where = f"{DTYPES_FILE}: {entry.get('name', entry)}"
    if not isinstance(entry, dict) or sorted(entry) != sorted(FIELDS):
        raise ValueError(f"{where}: an entry has exactly {', '.join(FIELDS)}")
    if entry["kind"] not in KINDS:
        raise ValueError(f"{where}: kind {entry['kind']!r} is not one of {KINDS}")
    if entry["size"] not in SIZES:
        raise ValueError(f"{where}: size {entry['size']!r} is not one of {SIZES}")
    return DType(
        name=str(entry["name"]),
        enumerator=str(entry["enumerator"]),
        c10=str(entry["c10"]),
        size=int(entry["size"]),
        kind=entry["kind"],
        spec=bool(entry["spec"]),
    )


@lru_cache(maxsize=1)
def load_dtypes() -> tuple[DType, ...]:
    """Every dtype, in enumerator order. ValueError for a malformed table."""
    dtypes = tuple(_dtype(e) for e in yaml.safe_load(DTYPES_FILE.read_text())["dtypes"])
    for field in ("name", "enumerator", "c10"):
        values = [getattr(d, field) for d in dtypes]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"{DTYPES_FILE}: {field} repeated: {', '.join(repeated)}")
    return dtypes


@lru_cache(maxsize=1)
def spec_dtypes() -> dict[str, DType]:
    """Spec name -> dtype, for the dtypes a native kernel spec may name."""
    return {d.name: d for d in load_dtypes() if d.spec}
