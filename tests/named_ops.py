"""The ops of the default set that test files name, for a build of fewer ops
that those tests run on (CI's sanitizer and release jobs build
`--ops covering,<these>`, docs/building.md#ci).

A file names an op when any identifier-like word in it (code, strings,
comments) is the op's name, or the name of a module function it serves
(`ops.pow` needs every op behind `torch.pow`'s overloads). Reading too much
costs a few ops; reading too little fails the test that calls the missing
op, with an AttributeError that names it.

    python tests/named_ops.py FILE...   # their names, comma-separated
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "generated" / "manifest.json"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def named_ops(files, manifest: Path = MANIFEST) -> list[str]:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    ops = {op["name"] for op in data["ops"]}
    serving = {
        name: {o["op"] for o in overloads if o["op"]}
        for name, overloads in data["functions"].items()
    }
    words: set[str] = set()
    for path in files:
        words |= set(_WORD.findall(Path(path).read_text(encoding="utf-8")))
    found = ops & words
    for name in serving.keys() & words:
        found |= serving[name]
    return sorted(found)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.rsplit("\n\n", 1)[-1].strip(), file=sys.stderr)
        return 2
    print(",".join(named_ops(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
