"""The call paths of the library, which of them a configuration can take, and
how the after build is forced onto each (data and pure functions).

  native      the library's hand-written kernel (cpp/kernels/cpu/) on core
              tensors; implementation="native" forces it
  direct      at::cpu::<op>_out under an autograd-below guard, outputs'
              versions bumped (the default for plain CPU tensors of ops with
              a CPU structured kernel: manifest `direct_cpu`)
  dispatcher  at::<op>_out through the c10 dispatcher (set_direct_mode(False);
              the only torch path of ops without a direct kernel, and of
              composites, whose C++ body calls ATen)
  from_blob   every at::Tensor a pooled wrapper re-bound to the raw pointer
              per call (set_handle_reuse(False); aten_convert.h: the wrapper
              pool), then the direct or dispatcher call

Off the CPU (bench --device cuda) only native (the platform's kernels),
dispatcher and from_blob apply, and only the latter two have floors.

The *default* path is what a plain call (no implementation=, default
switches) takes; that is the "after" variant. A forced path changes as little
as it can: the switches, and implementation= only where the default would
otherwise take another path (e.g. implementation="torch" to leave a native
kernel). Each path has its own floor (floor.py) doing the same work.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.manifest import Op

PATHS = ("native", "direct", "dispatcher", "from_blob")


@dataclass(frozen=True)
class Setting:
    """How to make the after build take a path."""

    path: str
    handle_reuse: bool
    direct_mode: bool
    implementation: str | None  # the implementation= keyword; None: not passed

    def describe(self) -> str:
        parts = []
        if not self.handle_reuse:
            parts.append("set_handle_reuse(False)")
        if not self.direct_mode:
            parts.append("set_direct_mode(False)")
        if self.implementation:
            parts.append(f'implementation="{self.implementation}"')
        return ", ".join(parts) or "defaults"


# torch device type -> the library's platform of its native kernels (CUDA is
# nvidia unless a build targets another port that uses it).
PLATFORMS = {"cpu": "cpu", "cuda": "nvidia"}


def platform(device: str) -> str:
    kind = device.split(":", 1)[0]
    return PLATFORMS.get(kind, kind)


def native_dtypes(op: Op, device: str = "cpu") -> tuple[str, ...]:
    return op.implementations.native_dtypes(platform(device))


def native_limit(op: Op, dtype: str, device: str = "cpu") -> int:
    """Most elements for which the native kernel is the default (-1: any)."""
    limit = op.implementations.native_limit(platform(device), dtype)
    return -1 if limit is None else limit


def _on_cpu(device: str) -> bool:
    return device.split(":", 1)[0] == "cpu"


def _torch_path(op: Op, device: str = "cpu") -> str:
    return "direct" if op.direct_cpu and _on_cpu(device) else "dispatcher"


def default_path(op: Op, dtype: str, key_numel: int, device: str = "cpu") -> str:
    """The path of a plain call; key_numel: elements of the first tensor
    argument (the native kernels' size limits apply to it)."""
    if dtype in native_dtypes(op, device):
        limit = native_limit(op, dtype, device)
        if limit < 0 or key_numel <= limit:
            return "native"
    return _torch_path(op, device)


def applicable(op: Op, dtype: str, device: str = "cpu") -> tuple[str, ...]:
    """Every path a call of this op in this dtype can be forced onto."""
    result = []
    if dtype in native_dtypes(op, device):
        result.append("native")
    if op.direct_cpu and _on_cpu(device):
        result.append("direct")
    result += ["dispatcher", "from_blob"]
    return tuple(result)


def has_floor(path: str, device: str = "cpu") -> bool:
    """The direct and native floors call CPU code (at::cpu::, the CPU kernels)."""
    return _on_cpu(device) or path in ("dispatcher", "from_blob")


def setting(path: str, default: str) -> Setting:
    """The switches and keyword that put a call on `path` when a plain call
    takes `default`."""
    if path == "native":
        return Setting(path, True, True, None if default == "native" else "native")
    leave_native = "torch" if default == "native" else None
    if path == "direct":
        return Setting(path, True, True, leave_native)
    if path == "dispatcher":
        return Setting(path, True, False, leave_native)
    if path == "from_blob":
        return Setting(path, False, True, leave_native)
    raise ValueError(f"unknown path {path!r}")


def from_blob_inner(op: Op, device: str = "cpu") -> str:
    """The call the from_blob path makes after rebuilding its tensors (direct
    mode stays on when it is forced onto from_blob)."""
    return _torch_path(op, device)


def before_setting(op: Op, dtype: str, device: str = "cpu") -> Setting:
    """The before build: -O0 wrappers, the from_blob path through the
    dispatcher, never a native kernel."""
    leave_native = "torch" if dtype in native_dtypes(op, device) else None
    return Setting("before", False, False, leave_native)
