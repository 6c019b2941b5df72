"""Regenerate the golden files the generator's golden-file tests compare against.

Each directory tests/fixtures/specs/NAME/ is rendered into
tests/fixtures/golden/NAME/ (files the generator no longer produces are
removed there), from the ATen schemas of tests/fixtures/schemas/NAME.json,
which this records first from the installed torch (the functions the specs
use, tests/schema_fixture.py): run it with the development release, torch
2.13.0, so that the goldens hold on every release (docs/torch-releases.md).
Run it from anywhere after an intended change to the templates, the model,
the schema extraction or a fixture spec, then review the diff and commit it:

    python scripts/update_goldens.py          # every fixture
    python scripts/update_goldens.py basic    # only tests/fixtures/specs/basic/

The test that uses the goldens is tests/test_generator_golden.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "tests" / "fixtures" / "specs"
GOLDEN = REPO / "tests" / "fixtures" / "golden"

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import schema_fixture  # noqa: E402

from infiniops_codegen.render import pipeline, sources as render, writer  # noqa: E402
from infiniops_codegen.schema.db import load_schema_db  # noqa: E402


def update(name: str) -> None:
    db = schema_fixture.subset(load_schema_db(), schema_fixture.bases(SPECS / name))
    schema_fixture.SCHEMAS.mkdir(exist_ok=True)
    schema_fixture.path(name).write_text(schema_fixture.dump(db), encoding="utf-8")
    print(
        f"{name}: schemas of {len(db.out_overloads)} out= overloads from torch {db.torch_version}"
    )
    opset = pipeline.load_opset(SPECS / name, db=schema_fixture.load(name))
    result = writer.write(render.render(opset), GOLDEN / name)
    changed = result.stale + result.missing
    print(
        f"{name}: {len(changed)} written, {len(result.extra)} removed, "
        f"{len(result.unchanged)} unchanged"
    )
    for rel in changed:
        print(f"  wrote {rel}")
    for rel in result.extra:
        print(f"  removed {rel}")


def main(argv: list[str]) -> int:
    names = argv or sorted(p.name for p in SPECS.iterdir() if p.is_dir())
    for name in names:
        if not (SPECS / name).is_dir():
            print(f"error: no fixture spec dir {SPECS / name}", file=sys.stderr)
            return 2
        update(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
