"""Regenerate the golden files the generator's golden-file tests compare against.

Each directory tests/fixtures/specs/NAME/ is rendered into
tests/fixtures/golden/NAME/ (files the generator no longer produces are
removed there). Run it from anywhere after an intended change to the
templates, the model or a fixture spec, then review the diff and commit it:

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

from infiniops_codegen import pipeline, writer  # noqa: E402


def update(name: str) -> None:
    gen = pipeline.generate(SPECS / name)
    result = writer.write(gen.files, GOLDEN / name)
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
