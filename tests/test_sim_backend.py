"""The sim backend (infiniops_codegen.sim): a PrivateUse1 device on the CPU
with protected memory, asynchronous streams and a CPU fallback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import infiniops_codegen.sim as sim  # noqa: E402 - builds the backend: a failure fails


@pytest.fixture(autouse=True)
def _clean_state():
    """Every test starts on device 0, default streams, counters at zero."""
    sim.synchronize(0)
    sim.synchronize(1)
    sim.set_device(0)
    sim.reset_stats()
    yield
    sim.set_null_kernels(False)
    sim.set_device(0)
    for index in range(sim.device_count()):
        sim.set_stream(sim.default_stream(index))
    sim.set_device(0)


def run_child(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_registered_as_torch_sim():
    assert torch.sim is sim
    assert torch._C._get_privateuse1_backend_name() == "sim"
    assert torch.device("sim:1").type == "sim"
    assert torch.ones(2).sim().is_sim
    # A second import is harmless.
    import importlib

    assert importlib.import_module("infiniops_codegen.sim") is sim


def test_two_devices_and_current_device():
    assert sim.device_count() == 2 and sim.is_available()
    assert sim.current_device() == 0
    sim.set_device(1)
    assert sim.current_device() == 1
    assert torch.empty(1, device="sim").device == torch.device("sim:1")
    sim.set_device(0)
    with sim.device(1):
        assert sim.current_device() == 1
    assert sim.current_device() == 0
    with pytest.raises(ValueError):
        sim.set_device(2)


def test_fallback_values_equal_cpu_and_counted():
    a_cpu = torch.arange(6.0).reshape(2, 3)
    a = a_cpu.to("sim")
    b = torch.ones(3, device="sim")
    sim.reset_stats()
    out = torch.add(a, b, alpha=2)
    assert out.device == torch.device("sim:0")
    stats = sim.stats()
    assert stats["fallback_ops"] == {"aten::add.out": 1}
    assert stats["fallback_runs"] == 1
    # The fallback's own moves are not device->host copies.
    assert stats["device_to_host_copies"] == 0
    host = out.cpu()
    assert sim.stats()["device_to_host_copies"] == 1
    torch.testing.assert_close(host, torch.add(a_cpu, torch.ones(3), alpha=2))
    # In-place, out= with a resize, views, lists.
    c = torch.empty(0, device="sim")
    torch.mul(a, 3, out=c)
    torch.testing.assert_close(c.cpu(), a_cpu * 3)
    a.t().mul_(2)
    torch.testing.assert_close(a.cpu(), a_cpu * 2)
    torch.testing.assert_close(
        torch.cat([a, a]).cpu(), torch.cat([a_cpu * 2, a_cpu * 2])
    )
    torch.testing.assert_close(a[:, ::2].contiguous().cpu(), (a_cpu * 2)[:, ::2])
    assert a.sum().item() == pytest.approx(30.0)


def test_host_dereference_faults_in_child():
    code = """
        import ctypes, torch, infiniops_codegen.sim
        t = torch.full((4,), 3.0, device="sim")
        assert t.cpu().tolist() == [3.0] * 4, "copy through the runtime works"
        print("copied", flush=True)
        ctypes.c_float.from_address(t.data_ptr()).value
        print("read", flush=True)
    """
    proc = run_child(code)
    assert proc.returncode == -signal.SIGSEGV, proc.stderr
    assert "copied" in proc.stdout and "read" not in proc.stdout
    # The off switch for sanitizer builds: the same read then succeeds.
    off = run_child(code, INFINI_SIM_PROTECT="0")
    assert off.returncode == 0, off.stderr
    assert "read" in off.stdout


def test_data_ptr_maps_back_to_its_device():
    t0 = torch.empty(100, device="sim:0")
    t1 = torch.empty(100, device="sim:1")
    assert sim._device_of(t0.data_ptr()) == 0
    assert sim._device_of(t1.data_ptr() + 17) == 1  # inside the block
    assert sim._device_of(torch.empty(3).data_ptr()) == -1


def test_stream_order_and_wait_stream():
    side = sim.Stream()
    assert side.sim_stream != sim.current_stream().sim_stream
    src = torch.full((1000,), 7.0, device="sim")
    dst = torch.zeros(1000, device="sim")
    sim.synchronize()
    # The side stream is busy; its copy lands after the sleep.
    sim._sleep(300, stream=side)
    with sim.stream(side):
        assert sim.current_stream() == side
        dst.copy_(src)
    assert sim.current_stream() == sim.default_stream()
    # Work on the current stream that does not wait reads the old contents.
    assert dst.sum().item() == 0.0
    sim.current_stream().wait_stream(side)
    assert dst.sum().item() == 7000.0


def test_events():
    stream = sim.Stream()
    start, end = sim.Event(enable_timing=True), sim.Event(enable_timing=True)
    assert end.query()  # never recorded
    start.record(stream)
    sim._sleep(150, stream=stream)
    end.record(stream)
    assert not end.query()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 100
    # An event makes another stream wait.
    other = sim.Stream()
    x = torch.zeros(10, device="sim")
    ones = torch.ones(10, device="sim")
    sim.synchronize()
    sim._sleep(200, stream=stream)
    with sim.stream(stream):
        x.copy_(ones)
    done = sim.Event()
    done.record(stream)
    other.wait_event(done)
    with sim.stream(other):
        assert x.sum().item() == 10.0


def test_other_device_guard():
    t_cpu = torch.arange(5.0)
    t = t_cpu.to("sim:1")
    assert t.device == torch.device("sim:1")
    assert sim.current_device() == 0
    r = torch.exp(t)
    assert r.device == torch.device("sim:1")
    torch.testing.assert_close(r.cpu(), torch.exp(t_cpu))
    assert sim.current_device() == 0
    moved = r.to("sim:0")
    torch.testing.assert_close(moved.cpu(), torch.exp(t_cpu))


def test_mixed_devices_raise():
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(torch.ones(3), torch.ones(3, device="sim"))
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(torch.ones(3, device="sim:0"), torch.ones(3, device="sim:1"))
    # A 0-dim CPU tensor is a scalar, as on CUDA.
    r = torch.ones(3, device="sim") + torch.tensor(2.0)
    assert r.device.type == "sim" and r.cpu().tolist() == [3.0] * 3


def test_generators():
    g = torch.Generator(device="sim")
    assert g.device == torch.device("sim:0")
    g.manual_seed(123)
    a = torch.randn(5, device="sim", generator=g)
    g.manual_seed(123)
    b = torch.randn(5, device="sim", generator=g)
    assert a.device.type == "sim"
    torch.testing.assert_close(a.cpu(), b.cpu())
    torch.manual_seed(7)
    c = torch.randn(5, device="sim").cpu()
    d = torch.randn(5, device="sim").cpu()
    torch.manual_seed(7)
    torch.testing.assert_close(torch.randn(5, device="sim").cpu(), c)
    assert not torch.equal(c, d)  # the default generator advances


def test_null_mode_does_no_copies():
    a = torch.ones(4, device="sim")
    c = torch.full((4,), 5.0, device="sim")
    sim.reset_stats()
    with sim.null_kernels():
        r = torch.add(a, a, out=c)
        assert r is c
    assert sim.stats() == sim._C.stats()
    assert sim.stats()["fallback_runs"] == 0
    assert sim.stats()["device_to_host_copies"] == 0
    assert sim.stats()["host_to_device_copies"] == 0
    assert c.cpu().tolist() == [5.0] * 4  # nothing ran
    torch.add(a, a, out=c)
    assert c.cpu().tolist() == [2.0] * 4


def test_a_refused_device_copy_raises_at_once_and_the_stream_goes_on():
    """A device-to-device copy_ that torch refuses (into an expanded tensor:
    internal overlap) raises on the calling thread, as on CUDA, and leaves
    no sticky error on the stream: the next work runs."""
    src = torch.arange(6.0).reshape(2, 3).to("sim")
    dst = torch.zeros(1, 3, device="sim").expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        dst.copy_(src.t().contiguous().t())  # strided: the queued path
    sim.synchronize()
    assert (src * 2).cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]


def test_kernel_error_surfaces_at_synchronize():
    stream = sim.Stream()
    try:
        sim._fail("boom from a kernel", stream=stream)
        with pytest.raises(RuntimeError, match="boom from a kernel"):
            stream.synchronize()
        # Sticky, as CUDA's asynchronous errors.
        with pytest.raises(RuntimeError, match="boom"):
            sim.synchronize()
    finally:
        sim._clear_errors()
    stream.synchronize()


def test_launch_needs_the_streams_device():
    s1 = sim.Stream(device=1)
    assert sim.current_device() == 0
    with pytest.raises(RuntimeError, match="current device is 0"):
        sim._sleep(1, stream=s1, set_device=False)
    sim._sleep(1, stream=s1)  # under a guard of the stream's device
    s1.synchronize()
    assert sim.current_device() == 0


def test_runtime_header_is_torch_free():
    # Kernels built by compilers that refuse torch's headers include it.
    proc = subprocess.run(
        ["c++", "-std=c++17", "-fsyntax-only", "-x", "c++", "-I", sim.include_dir, "-"],
        input="#include <infini_sim/runtime.h>\nint main() {}\n",
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    header = open(os.path.join(sim.include_dir, "infini_sim", "runtime.h")).read()
    assert "#include <c10" not in header and "#include <torch" not in header
    assert "#include <ATen" not in header


CONSUMER_CMAKE = """
cmake_minimum_required(VERSION 3.22)
project(consumer LANGUAGES CXX)
find_package(InfiniSim REQUIRED)
add_executable(consumer main.cpp)
target_compile_features(consumer PRIVATE cxx_std_20)
target_link_libraries(consumer PRIVATE InfiniSim::torch)
"""

CONSUMER_MAIN = r"""
#include <infini_sim/torch.h>
#include <cstdio>
int main() {
  using namespace infini_sim;
  float* d = static_cast<float*>(device_malloc(1, 4 * sizeof(float)));
  set_device(1);
  const SimStreamGuard guard(getStreamFromExternal(default_stream(1), 1));
  simStream_t s = getCurrentSimStream(1).stream();
  launch(s, {d}, [d] { for (int i = 0; i < 4; ++i) d[i] = 2.5f * i; });
  float h[4];
  memcpy_device_to_host(h, d, sizeof h, s);
  device_free(d);
  std::printf("%g %g %d %d\n", h[1], h[3], device_of(d), current_device());
  return s == default_stream(1) ? 0 : 1;
}
"""


def test_cmake_package_for_projects(tmp_path):
    """A project builds against InfiniSim::torch with find_package."""
    (tmp_path / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    (tmp_path / "main.cpp").write_text(CONSUMER_MAIN)
    build = tmp_path / "build"
    torch_cmake = os.path.join(os.path.dirname(torch.__file__), "share", "cmake")
    for cmd in (
        [
            "cmake",
            "-S",
            str(tmp_path),
            "-B",
            str(build),
            f"-DCMAKE_PREFIX_PATH={sim.cmake_prefix_path};{torch_cmake}",
        ],
        ["cmake", "--build", str(build)],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    run = subprocess.run([str(build / "consumer")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2.5", "7.5", "-1", "1"]


def test_build_lock_and_reuse(tmp_path):
    # A second process finds the published entry and does not rebuild.
    start = time.monotonic()
    proc = run_child("import infiniops_codegen.sim as s; print(s.cmake_prefix_path)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == sim.cmake_prefix_path
    assert time.monotonic() - start < 60


@pytest.mark.own_build(
    "a build of its own: the simulated accelerator's backend from a broken source"
)
def test_failed_build_raises_import_error_with_compiler_output(tmp_path):
    code = f"""
        import os, shutil, sys
        from pathlib import Path
        from infiniops_codegen.sim import _build
        # After the import (which loads the good build): a fresh cache.
        os.environ["INFINIOPS_CODEGEN_CACHE"] = {str(tmp_path / "cache")!r}
        src = Path({str(tmp_path)!r}) / "src"
        shutil.copytree(_build.SOURCE_DIR, src, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        header = src / "include" / "infini_sim" / "runtime.h"
        header.write_text("int broken = ;\\n" + header.read_text())
        _build.SOURCE_DIR = src
        try:
            _build.ensure_built()
        except ImportError as e:
            print(type(e).__name__, str(e))
        else:
            print("built")
    """
    # -Wfatal-errors: each compile stops at the error instead of parsing ATen.
    proc = run_child(code, CXXFLAGS="-Wfatal-errors")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("BuildError building the sim backend failed")
    assert "error:" in proc.stdout and "int broken" in proc.stdout


def test_forked_child_refuses_work():
    sim._sleep(1)  # the default stream's worker has started
    sim.synchronize()
    code = """
        import os, torch, infiniops_codegen.sim as sim
        sim._sleep(1); sim.synchronize()
        pid = os.fork()
        if pid == 0:
            try:
                sim._sleep(1)
                os._exit(3)
            except RuntimeError as e:
                os._exit(0 if sim._is_in_bad_fork() and "forked" in str(e) else 4)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), sim._is_in_bad_fork())
    """
    proc = run_child(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False"]
