"""A fixture of ATen schemas that holds whichever torch is installed: the
schema oracle's records (schema_db.SchemaDB) of the functions a fixture's
specs use, as JSON, recorded once from the development release by
scripts/update_goldens.py. The golden files are rendered from it, so that
they test the templates and the model, not the installed torch's schemas
(which differ between releases: docs/torch-releases.md)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from infiniops_codegen.schema.db import SchemaDB
from infiniops_codegen.schema.records import (
    AtenSchema,
    FunctionalCall,
    PyOverload,
    PyParam,
    SchemaArg,
    TypeInfo,
)
from infiniops_codegen.opspec.entries import read_specs

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "schemas"


def path(name: str) -> Path:
    return SCHEMAS / f"{name}.json"


def bases(spec_dir: Path) -> set[str]:
    """The ATen functions a spec directory names (and its composites use)."""
    specs = read_specs(spec_dir, [])
    found = {s.aten.split(".", 1)[0] for s in specs.ops if s.aten}
    return found | {u for s in specs.ops for u in s.uses}


def subset(db: SchemaDB, names: set[str]) -> SchemaDB:
    """db with only the records of the functions `names` (`sum`: every sum.*
    overload, torch.sum's Python signatures, the header sum): enough to
    resolve specs of those functions exactly as db does."""
    return SchemaDB(
        db.torch_version,
        {k: s for k, s in db.out_overloads.items() if s.base in names},
        frozenset(n for n in db.all_names if n.split(".", 1)[0] in names),
        frozenset(h for h in db.headers if h in names),
        {k: v for k, v in db.python_overloads.items() if k in names},
    )


def dump(db: SchemaDB) -> str:
    data = {
        "recorded_from_torch": db.torch_version,
        "out_overloads": {
            k: dataclasses.asdict(s) for k, s in db.out_overloads.items()
        },
        "all_names": sorted(db.all_names),
        "headers": sorted(db.headers),
        "python_overloads": {
            k: [dataclasses.asdict(o) for o in v]
            for k, v in db.python_overloads.items()
        },
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def load(name: str) -> SchemaDB:
    data = json.loads(path(name).read_text(encoding="utf-8"))
    return SchemaDB(
        data["recorded_from_torch"],
        {k: _schema(s) for k, s in data["out_overloads"].items()},
        frozenset(data["all_names"]),
        frozenset(data["headers"]),
        {
            k: tuple(_overload(o) for o in v)
            for k, v in data["python_overloads"].items()
        },
    )


def _schema(s: dict) -> AtenSchema:
    call = s.get("functional_call")
    return AtenSchema(
        **{
            **s,
            "args": tuple(
                SchemaArg(**{**a, "type": TypeInfo(**a["type"])}) for a in s["args"]
            ),
            "cpp_order": tuple(s["cpp_order"]),
            "tags": tuple(s["tags"]),
            "functional_tags": tuple(s.get("functional_tags", ())),
            "functional_call": FunctionalCall(**call) if call else None,
        }
    )


def _overload(o: dict) -> PyOverload:
    return PyOverload(**{**o, "params": tuple(PyParam(**p) for p in o["params"])})
