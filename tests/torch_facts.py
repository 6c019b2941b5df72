"""Facts of the installed torch that tests compare with, found without the
generator: they hold for whichever supported release is installed
(docs/torch-releases.md), where a number written into a test holds for one."""

from __future__ import annotations

import functools


@functools.cache
def out_overloads() -> frozenset[str]:
    """Every ATen overload with out= arguments, as torch's dispatcher has
    them registered (`name.overload`): what torchgen's native_functions.yaml
    gives the schema oracle (schema/db.py), read from the other side."""
    import torch

    names = set()
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::") and any(a.is_out for a in schema.arguments):
            base = schema.name.removeprefix("aten::")
            names.add(
                f"{base}.{schema.overload_name}" if schema.overload_name else base
            )
    return frozenset(names)


def version() -> str:
    """torch.__version__ as torch spells it (`2.14.1+cu130`)."""
    import torch

    return str(torch.__version__)
