"""Stage 2, generate time: the typed model the templates read.

Takes: spec entries (`opspec`) and schemas (`schema`).
Gives: an `OpSet` of frozen `Op`s (`ops`; `resolve` makes them, with the
overload choice of `overloads`), the module's own names that no op may take
(`module_api`), the kernel sources a spec asks for (`kernel_sources`), and
the manifest: the model as a generation records it, read back by every tool
that looks at a generation or a build (`manifest`, `coverage` for `list`).
"""

from .._moved import forward

# `from infiniops_codegen.model import X`, X of the old model.py, for a release.
__getattr__ = forward(__name__, "ops")
