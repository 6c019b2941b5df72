"""`python -m infiniops_codegen.sim`: builds the sim backend (if needed) and
prints where it is, so that CI can build it before the tests run."""

from __future__ import annotations

import sys

from . import _build


def main() -> int:
    prefix = _build.ensure_built(verbose=True)
    print(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
