"""What ran where (docs/observability.md): the Python side of a built
library's call counters, call trace and strict native mode.

The state is the C++ library's (support/cpp/core/observe.h), shared by its
Python and C++ callers: counters per op x implementation x path, one JSON
line per call, and calls that must not fall back. Nothing here runs on a
call: while nothing observes, a call pays one check of a flag.

runtime.load installs these on the loaded module: `ops.stats()`,
`ops.reset_stats()`, `ops.require_native(...)` and `ops.trace(...)` (the
last unless the build has ATen's op `trace`, which keeps the name; then use
`infiniops_codegen.runtime.observe.trace(ops, ...)`).
"""

from __future__ import annotations

import collections
import json
import os
import threading
from typing import NamedTuple

# The environment variables the library reads when it is loaded.
TRACE_ENV = "INFINIOPS_TRACE"
STATS_ENV = "INFINIOPS_STATS"
REQUIRE_NATIVE_ENV = "INFINIOPS_REQUIRE_NATIVE"

_lock = threading.Lock()
# The modules traced now (by name): one trace at a time each.
_tracing: set[str] = set()


class Key(NamedTuple):
    """One counter: an op, what ran it ("native", "composite", "torch") and
    how its tensors reached the kernel ("handle", "lane", "from_blob"; for
    "torch", with how it reached ATen's kernel: "+direct", "+dispatcher")."""

    op: str
    implementation: str
    path: str


def stats(module) -> collections.Counter[Key]:
    """Calls per (op, implementation, path) since reset_stats(), all
    threads summed; empty unless counting (reset_stats(), INFINIOPS_STATS=1)."""
    return collections.Counter(
        {
            Key(op, impl, path): calls
            for op, impl, path, calls in module._observe_stats()
        }
    )


def reset_stats(module, count: bool = True) -> None:
    """Zero the counters and count every call from now on (count=False:
    stop counting, which gives the calls back their cost)."""
    module._observe_reset_stats(bool(count))


class trace:
    """Trace the module's calls while the block runs: one JSON line per call
    (op, aten, device, tensors, implementation, path, declined, error).

    file: a path (str or os.PathLike), written as the calls run; an open
    text file (anything with write()), written when the block ends; or None.
    Either way `records` holds the calls as dicts once the block ended
    (read back from a path)."""

    def __init__(self, module, file=None):
        self._module = module
        self._file = file
        self.records: list[dict] = []

    def __enter__(self):
        path = None
        if isinstance(self._file, (str, os.PathLike)):
            path = os.fspath(self._file)
        elif self._file is not None and not callable(
            getattr(self._file, "write", None)
        ):
            raise TypeError(
                "trace(): file must be a path, an open text file or None, not "
                f"{type(self._file).__name__}"
            )
        with _lock:
            if self._module.__name__ in _tracing:
                raise RuntimeError(
                    f"trace(): {self._module.__name__} is traced already"
                )
            self._module._observe_trace(path)
            _tracing.add(self._module.__name__)
        return self

    def __exit__(self, *exc):
        with _lock:
            lines = self._module._observe_end_trace()
            _tracing.discard(self._module.__name__)
        if isinstance(self._file, (str, os.PathLike)):
            with open(self._file, encoding="utf-8") as f:
                lines = f.read().splitlines()
        elif self._file is not None:
            for line in lines:
                self._file.write(line + "\n")
        self.records = [json.loads(line) for line in lines]
        return False


def _environment_requirement():
    """INFINIOPS_REQUIRE_NATIVE as the library read it: True, names or None."""
    value = os.environ.get(REQUIRE_NATIVE_ENV, "")
    if value in ("", "0"):
        return None
    if value == "1":
        return True
    return [n for n in value.split(",") if n]


class require_native:
    """While the block runs, a call of these ops (True: any op) that would
    fall back to PyTorch raises NotImplementedError saying why the native
    kernel did not take it. Process-wide; blocks nest (the union holds)."""

    _stacks: dict[str, list] = {}

    def __init__(self, module, ops=True):
        self._module = module
        if ops is True:
            self._ops = True
        else:
            names = [ops] if isinstance(ops, str) else list(ops)
            known = module.implementations()
            unknown = sorted(
                {n for n in names if not isinstance(n, str) or n not in known}
            )
            if unknown:
                raise ValueError(
                    f"require_native(): {module.__name__} has no op "
                    + ", ".join(map(repr, unknown))
                )
            self._ops = names

    def __enter__(self):
        with _lock:
            stack = self._stacks.setdefault(self._module.__name__, [])
            stack.append(self._ops)
            self._apply(stack)
        return self

    def __exit__(self, *exc):
        with _lock:
            stack = self._stacks[self._module.__name__]
            stack.remove(self._ops)
            self._apply(stack)
        return False

    def _apply(self, stack) -> None:
        wanted = [_environment_requirement(), *stack]
        if any(w is True for w in wanted):
            self._module._observe_require_native(True)
            return
        names = sorted({n for w in wanted if w for n in w})
        self._module._observe_require_native(names or None)


def install(module) -> None:
    """The functions above as the module's own (runtime.load)."""

    def _bind(function, name):
        def bound(*args, **kwargs):
            return function(module, *args, **kwargs)

        bound.__name__ = bound.__qualname__ = name
        bound.__doc__ = function.__doc__
        return bound

    module.stats = _bind(stats, "stats")
    module.reset_stats = _bind(reset_stats, "reset_stats")
    module.require_native = _bind(require_native, "require_native")
    if not hasattr(module, "trace"):  # ATen's trace op keeps its name
        module.trace = _bind(trace, "trace")
