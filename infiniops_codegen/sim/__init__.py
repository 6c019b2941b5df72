"""sim: a simulated accelerator, a PyTorch PrivateUse1 backend on the CPU.

Importing this module builds the backend if needed (cached, see _build.py),
loads it, renames PrivateUse1 to "sim" and registers this module as
`torch.sim`. Device memory is protected from host access, work runs
asynchronously on per-stream worker threads, and every ATen op without a sim
kernel runs through a CPU fallback (README.md).

Takes: nothing of the generator (like runtime/: tests/test_import_contract.py).
Gives: the `sim` device, its streams and memory, to tests, the harness
(`check --device sim`) and a `cpu,sim` build's native sim kernels.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from typing import Any, Iterator

import torch

from . import _build

__all__ = [
    "Event",
    "Stream",
    "cmake_prefix_path",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "include_dir",
    "is_available",
    "library_dir",
    "manual_seed",
    "manual_seed_all",
    "null_kernels",
    "protection_enabled",
    "reset_stats",
    "set_device",
    "set_null_kernels",
    "set_stream",
    "stats",
    "stream",
    "synchronize",
]

BACKEND = "sim"


def _load_extension(prefix: Path) -> Any:
    name = f"{__name__}._C"
    if name in sys.modules:
        return sys.modules[name]
    paths = sorted(prefix.glob("_C.*.so"))
    if not paths:
        raise ImportError(f"the sim backend's build {prefix} has no _C module")
    loader = importlib.machinery.ExtensionFileLoader(name, str(paths[0]))
    spec = importlib.util.spec_from_file_location(name, paths[0], loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


_prefix = _build.ensure_built()
_C = _load_extension(_prefix)

# For projects that build against the backend: find_package(InfiniSim) with
# CMAKE_PREFIX_PATH=cmake_prefix_path gives InfiniSim::runtime and
# InfiniSim::torch.
cmake_prefix_path = str(_prefix)
include_dir = str(_prefix / "include")
library_dir = str(_prefix / "lib")


def _device_index(device: Any = None, optional: bool = False) -> int:
    """A device index from an int, "sim", "sim:1", a torch.device or None
    (the current device)."""
    if device is None:
        return _C.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != BACKEND:
            raise ValueError(f"expected a sim device, got {device}")
        return _C.current_device() if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return _C.current_device() if device < 0 and optional else device
    raise TypeError(f"expected a sim device, got {device!r}")


def device_count() -> int:
    return _C.device_count()


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    """True in a child forked after a stream's worker thread started (the
    workers do not survive a fork)."""
    return _C.in_bad_fork()


def current_device() -> int:
    return _C.current_device()


def set_device(device: Any) -> None:
    _C.set_device(_device_index(device))


class device:
    """Context manager: makes a sim device current, restores the previous."""

    def __init__(self, device: Any) -> None:
        self.index = _device_index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = _C.current_device()
        _C.set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        _C.set_device(self.previous)


def synchronize(device: Any = None) -> None:
    """Waits for every stream of the device; raises a failed kernel's error."""
    _C.synchronize(_device_index(device))


class Stream(torch.Stream):
    """A sim stream: a torch.Stream with the runtime handle as `sim_stream`."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Any:
        if kwargs:  # (stream_id, device_index, device_type): an existing one
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        return super().__new__(
            cls, device=torch.device(BACKEND, index), priority=priority
        )

    @property
    def sim_stream(self) -> int:
        return _C.stream_handle(self.device_index, self.stream_id)

    def __enter__(self) -> "Stream":
        self._context = _StreamContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._context.__exit__(*exc)

    def __repr__(self) -> str:
        return (
            f"torch.sim.Stream(device=sim:{self.device_index} "
            f"sim_stream={self.sim_stream:#x})"
        )


def _wrap(device_index: int, stream_id: int) -> Stream:
    return Stream(
        stream_id=stream_id, device_index=device_index, device_type=_C.DEVICE_TYPE
    )


def current_stream(device: Any = None) -> Stream:
    """The device's current stream on this thread."""
    index = _device_index(device)
    return _wrap(index, _C.current_stream_id(index))


def default_stream(device: Any = None) -> Stream:
    return _wrap(_device_index(device), 0)


def set_stream(stream: torch.Stream) -> None:
    """Makes `stream` its device's current stream and its device current."""
    _check_sim_stream(stream)
    _C.exchange_stream(stream.device_index, stream.stream_id)
    _C.set_device(stream.device_index)


def _check_sim_stream(stream: Any) -> None:
    if not isinstance(stream, torch.Stream) or stream.device.type != BACKEND:
        raise TypeError(f"expected a sim stream, got {stream!r}")


class _StreamContext:
    """Makes a stream and its device current; restores both (as
    torch.cuda.stream)."""

    def __init__(self, stream: torch.Stream | None) -> None:
        if stream is not None:
            _check_sim_stream(stream)
        self.stream = stream
        self.saved: tuple[int, int, int] | None = None

    def __enter__(self) -> torch.Stream | None:
        s = self.stream
        if s is None:
            return None
        old_device = _C.current_device()
        old_id = _C.exchange_stream(s.device_index, s.stream_id)
        _C.set_device(s.device_index)
        self.saved = (old_device, s.device_index, old_id)
        return s

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            old_device, index, old_id = self.saved
            _C.exchange_stream(index, old_id)
            _C.set_device(old_device)


def stream(stream: torch.Stream | None) -> _StreamContext:
    """Context manager: `stream` (and its device) current within it; None
    changes nothing."""
    return _StreamContext(stream)


class Event(torch.Event):
    """A sim event (record, wait, query, synchronize, elapsed_time)."""

    def __new__(
        cls,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> Any:
        return super().__new__(
            cls,
            device=torch.device(BACKEND, _C.current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event's record to `end_event`'s (both
        completed)."""
        return _C.elapsed_ms(self.event_id, end_event.event_id)


# ---- random numbers: one CPU-semantics generator per device ----

default_generators: tuple[torch.Generator, ...] = _C.default_generators()


def manual_seed(seed: int) -> None:
    default_generators[_C.current_device()].manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for gen in default_generators:
        gen.manual_seed(int(seed))


def seed() -> None:
    default_generators[_C.current_device()].seed()


def initial_seed() -> int:
    return default_generators[_C.current_device()].initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return default_generators[_device_index(device)].get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    default_generators[_device_index(device)].set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [g.get_state() for g in default_generators]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for gen, state in zip(default_generators, new_states):
        gen.set_state(state)


# ---- counters and modes ----


def stats() -> dict[str, Any]:
    """Counters since the last reset_stats(): device_to_host_copies,
    host_to_device_copies, device_to_device_copies, kernel_launches,
    fallback_runs and fallback_ops ({"aten::add.out": n, ...})."""
    return _C.stats()


def reset_stats() -> None:
    _C.reset_stats()


def protection_enabled() -> bool:
    """Whether device memory faults on host access (INFINI_SIM_PROTECT=0
    turns it off, for sanitizer builds)."""
    return _C.protection_enabled()


def set_null_kernels(on: bool) -> None:
    _C.set_null_kernels(bool(on))


@contextlib.contextmanager
def null_kernels(on: bool = True) -> Iterator[None]:
    """The no-work mode within the block (host overhead measurements):
    launches return at once, the fallback does nothing for ops that only
    write their arguments."""
    previous = _C.null_kernels()
    _C.set_null_kernels(on)
    try:
        yield
    finally:
        _C.set_null_kernels(previous)


# ---- test helpers ----


def _stream_of(stream: torch.Stream | None) -> torch.Stream:
    if stream is None:
        return current_stream()
    _check_sim_stream(stream)
    return stream


def _sleep(
    ms: float, stream: torch.Stream | None = None, *, set_device: bool = True
) -> None:
    """Enqueues a kernel that only waits `ms` milliseconds on `stream`
    (default: the current one): makes misordered work observable. With
    set_device=False the launch runs on the current device as it is, and
    fails (as a CUDA launch does) when that is not the stream's."""
    s = _stream_of(stream)
    launch = _C.sleep if set_device else _C.sleep_unguarded
    launch(s.device_index, s.stream_id, float(ms))


def _fail(message: str, stream: torch.Stream | None = None) -> None:
    """Enqueues a kernel that fails with `message` (reported by a later
    synchronize, as an asynchronous CUDA error)."""
    s = _stream_of(stream)
    _C.fail(s.device_index, s.stream_id, message)


def _clear_errors() -> None:
    """Forgets every stream's sticky kernel error."""
    _C.clear_errors()


def _device_of(ptr: int) -> int:
    """The sim device of an address (-1: not sim device memory)."""
    return _C.device_of(ptr)


def _register() -> None:
    # Importing twice (or after another module registered the name) is
    # harmless: each step is skipped once done.
    if torch._C._get_privateuse1_backend_name() != BACKEND:
        torch.utils.rename_privateuse1_backend(BACKEND)
    if getattr(torch, BACKEND, None) is not sys.modules[__name__]:
        torch._register_device_module(BACKEND, sys.modules[__name__])
    if not hasattr(torch.Tensor, BACKEND):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True,
            for_module=True,
            for_packed_sequence=True,
            for_storage=True,
        )


_register()
