"""The library on the simulated accelerator (infiniops_codegen.sim): the
device paths of the fallback, run for real on `sim` tensors (device memory
the host cannot touch, asynchronous streams, two devices).

The module under test is the default op set built with `--platform cpu,sim`
(build-sim/, or $INFINIOPS_SIM_BUILD_DIR; built here when missing). Each test
runs in a child interpreter: the library's module, like every extension
module, loads once per process, and this suite's workers already hold the
CPU build of the same name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime_conftest_helpers import BUILD_TIMEOUT_S, REPO, _build_lock, subprocess_env

pytestmark = pytest.mark.own_build("the default set built for cpu,sim (build-sim/)")

SIM_BUILD = Path(os.environ.get("INFINIOPS_SIM_BUILD_DIR") or REPO / "build-sim")
# The default set's native kernels on sim (op_specs: `native: {sim: ...}`).
NATIVE_ON_SIM = ("add", "mul", "silu", "rms_norm", "silu_and_mul")

PRELUDE = """
import sys, time
import torch
import infiniops_codegen.sim
from infiniops_codegen.runtime import load
ops = load({build!r})
sim = torch.sim

def stats():
    sim.synchronize()
    return sim.stats()
"""


@pytest.fixture(scope="module")
def sim_build() -> Path:
    """The cpu,sim build of the default set (built once, under the lock the
    CPU build uses, so parallel workers build it once), rebuilt as it was
    built (a sanitized one stays sanitized) when it is missing, made with
    another torch, or linked against another build of the sim backend (the
    loader would refuse it)."""
    import json
    import shlex

    import infiniops_codegen.sim as port
    from infiniops_codegen.base import torch_build
    from infiniops_codegen.base.locations import PORTS_RECORD, TORCH_RECORD, find_module
    from infiniops_codegen.runtime.loader import rebuild_command

    with _build_lock(SIM_BUILD):
        built = torch_build.read_record(SIM_BUILD / TORCH_RECORD)
        try:
            ports = json.loads((SIM_BUILD / PORTS_RECORD).read_text())
        except (OSError, ValueError):
            ports = []
        linked = [p.get("cmake_prefix_path") for p in ports]
        if (
            find_module(SIM_BUILD) is None
            or built != torch_build.installed()
            or linked != [port.cmake_prefix_path]
        ):
            cmd = [
                sys.executable, "-m", "infiniops_codegen.cli", "build",
                "--platform", "cpu,sim", "--build-dir", str(SIM_BUILD),
            ]  # fmt: skip
            if find_module(SIM_BUILD) is not None:  # as it was built
                words = shlex.split(rebuild_command(SIM_BUILD))
                cmd = [sys.executable, "-m", "infiniops_codegen.cli", *words[1:]]
            proc = subprocess.run(
                cmd, cwd=REPO, env=subprocess_env(), capture_output=True,
                text=True, timeout=BUILD_TIMEOUT_S,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return SIM_BUILD


def run(build: Path, body: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run body after PRELUDE in a child interpreter; its assertion errors
    come back in the test's message."""
    code = PRELUDE.format(build=str(build)) + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=subprocess_env(),
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return proc


def ok(build: Path, body: str) -> str:
    proc = run(build, body)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    return proc.stdout


def test_native_ops_run_on_the_device_and_move_nothing_to_the_host(sim_build):
    """Each default-set native op on sim float32 tensors: ops.stats() says
    native on the handle path, the device's fallback never saw it, and not one
    byte went device->host until the test read the result."""
    out = ok(
        sim_build,
        f"""
        ops.reset_stats()
        torch.manual_seed(0)
        x = torch.randn(4, 8)
        w = torch.randn(8)
        cases = {{
            "add": (lambda d: ops.add(d(x), d(x * 2), alpha=3, out=d(torch.empty(4, 8))),
                    x + 3 * (x * 2)),
            "mul": (lambda d: ops.mul(d(x), d(x), out=d(torch.empty(4, 8))), x * x),
            "silu": (lambda d: ops.silu(d(x), out=d(torch.empty(4, 8))),
                     torch.nn.functional.silu(x)),
            "rms_norm": (lambda d: ops.rms_norm(d(x), d(w), 1e-6, out=d(torch.empty(4, 8))),
                         torch.nn.functional.rms_norm(x, (8,), w, 1e-6)),
            "silu_and_mul": (lambda d: ops.silu_and_mul(d(x), out=d(torch.empty(4, 4))),
                             torch.nn.functional.silu(x[:, :4]) * x[:, 4:]),
        }}
        assert sorted(cases) == sorted({NATIVE_ON_SIM!r})
        for name, (call, expected) in cases.items():
            made = []
            def d(t):
                made.append(t.to("sim"))
                return made[-1]
            result = call(d)
            sim.reset_stats()
            ops.reset_stats()
            result = call(lambda t: t.to("sim"))  # inputs made before counting
            before = stats()
            assert before["device_to_host_copies"] == 0, (name, before)
            assert not before["fallback_runs"], (name, before)
            counted = ops.stats()
            paths = {{(k.implementation, k.path) for k in counted if k.op == name}}
            assert paths == {{("native", "handle")}}, (name, counted)
            assert result.device.type == "sim"
            torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)
            assert stats()["device_to_host_copies"] == 1, name  # the test's read
        print("native ok")
        """,
    )
    assert "native ok" in out


def test_every_default_op_takes_its_documented_path_and_copies_nothing(sim_build):
    """Each op of the default set, called once on sim tensors (the harness's
    first sample that torch accepts): ops.stats() shows the path the docs
    give it, native on the handle path where the op has a sim kernel for
    the dtype, else the torch fallback (or the op's composite) on the handle
    path; and no op moved a byte to the host (the sim counter reads 0). A
    wrapper that called .cpu() on a device tensor would pass every value
    check and fail here."""
    out = ok(
        sim_build,
        """
        import collections, warnings
        from infiniops_codegen import manifest
        from infiniops_codegen.harness import run as hrun, values
        warnings.filterwarnings("ignore")
        values.DEVICE = "sim"
        wrong, paths = [], collections.Counter()
        for op in manifest.of_build(ops.__file__.rsplit("/", 1)[0]).ops:
            for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64):
                plan = hrun.find_plan(op, dtype)
                if plan is not None:
                    break
            assert plan is not None, f"{op.name}: no sample"
            args = values.materialize(plan, dtype, "plain", 0)
            wanted = hrun.expected(op, args)
            outs = [torch.empty_like(w) for w in wanted]
            sim.synchronize(); sim.reset_stats(); ops.reset_stats()
            hrun.ours(ops, op, args, outs)
            copies = stats()["device_to_host_copies"]
            taken = {(k.implementation, k.path) for k in ops.stats() if k.op == op.name}
            dtype_name = str(dtype).removeprefix("torch.")
            if dtype_name in op.implementations.native_dtypes("sim"):
                expected = {("native", "handle")}
            elif op.aten is None:
                expected = {("composite", "handle")}
            else:
                expected = {("torch", "handle+dispatcher")}
            if taken != expected or copies:
                wrong.append((op.name, dtype_name, taken, expected, copies))
            paths[min(taken)] += 1
        assert not wrong, wrong
        print(dict(paths))
        """,
    )
    assert "('native', 'handle'): 5" in out, out


def test_torch_ops_reach_the_devices_kernels_with_their_handles(sim_build):
    """An op without a native kernel runs the device's ATen kernel (the sim
    fallback, here) through the handle: no copy to the host by the library."""
    ok(
        sim_build,
        """
        x = torch.randn(3, 5).to("sim")
        y = torch.empty(3, 5, device="sim")
        sim.reset_stats(); ops.reset_stats()
        ops.abs(x, out=y)
        s = stats()
        assert s["device_to_host_copies"] == 0, s
        assert s["fallback_ops"].get("aten::abs.out") == 1, s
        abs_keys = [k for k in ops.stats() if k.op == "abs"]
        assert abs_keys and all(
            k.implementation == "torch" and k.path.startswith("handle") for k in abs_keys
        ), ops.stats()
        torch.testing.assert_close(y.cpu(), x.cpu().abs())
        """,
    )


def test_the_from_blob_path_over_device_memory(sim_build):
    """Without handles the fallback rebuilds at::Tensors over the device
    pointers (at::from_blob, the device from the backend's getDeviceFromPtr):
    the values are right, the result stays on its device, nothing is copied."""
    ok(
        sim_build,
        """
        x = torch.randn(6).to("sim:1")
        y = torch.empty(6, device="sim:1")
        z = torch.empty(6, device="sim:1")
        ops.set_handle_reuse(False)
        sim.reset_stats()
        ops.abs(x, out=y)
        ops.add(x, y, out=z)  # native, from_blob
        s = stats()
        ops.set_handle_reuse(True)
        assert s["device_to_host_copies"] == 0, s
        torch.testing.assert_close(y.cpu(), x.cpu().abs())
        torch.testing.assert_close(z.cpu(), x.cpu() + x.cpu().abs())
        assert sim.current_device() == 0
        """,
    )


def test_a_given_stream_orders_the_op(sim_build):
    """stream=: the op's work goes on the given stream, after what is queued
    there. A delay is put on a side stream, then a native add and a fallback
    abs on it: the default stream sees none of it yet, the side stream's
    order gives abs the add's result, and the current stream is the default
    again after each call. The raw handle works as well as the object."""
    ok(
        sim_build,
        """
        x = torch.ones(1000).to("sim")
        doubled = torch.zeros(1000, device="sim")
        y = torch.zeros(1000, device="sim")
        side = sim.Stream()
        default = sim.current_stream()
        assert side != default
        sim.synchronize()
        sim._sleep(400, stream=side)
        ops.add(x, x, out=doubled, stream=side)  # native: queued behind the delay
        assert sim.current_stream() == default
        early = doubled.cpu()  # the default stream: the add has not run yet
        assert bool((early == 0).all()), "the add ran on the default stream"
        ops.abs(doubled, out=y, stream=side.sim_stream)  # raw handle
        assert sim.current_stream() == default
        # abs ran after the add: it waited for the side stream's work.
        side.synchronize()
        assert bool((y.cpu() == 2).all()), y.cpu()[:4]
        """,
    )


def test_a_tensor_on_device_1_is_computed_there(sim_build):
    """Tensors on sim:1 while sim:0 is current: the native kernel launches
    on device 1 (a launch needs its device current, as with CUDA) and the
    current device is 0 again after the call."""
    ok(
        sim_build,
        """
        sim.set_device(0)
        a = torch.randn(16).to("sim:1")
        b = torch.randn(16).to("sim:1")
        out = torch.empty(16, device="sim:1")
        ops.reset_stats()
        ops.add(a, b, out=out)
        assert sim.current_device() == 0
        assert out.device == torch.device("sim:1")
        torch.testing.assert_close(out.cpu(), a.cpu() + b.cpu())
        assert {k.implementation for k in ops.stats() if k.op == "add"} == {"native"}, ops.stats()
        ops.rms_norm(a.view(4, 4), b[:4], 1e-6, out=out.view(4, 4), stream=sim.Stream(device=1))
        assert sim.current_device() == 0
        """,
    )


def test_mixed_devices_raise_what_torch_raises_and_nothing_runs(sim_build):
    ok(
        sim_build,
        """
        cases = [
            (torch.ones(4), torch.ones(4, device="sim"), torch.zeros(4, device="sim")),
            (torch.ones(4, device="sim:0"), torch.ones(4, device="sim:1"),
             torch.zeros(4, device="sim:0")),
        ]
        for a, b, out in cases:
            for name in ("add", "sub"):  # native on sim, and not
                try:
                    getattr(torch, name)(a, b, out=out)
                except Exception as e:
                    theirs = type(e)
                else:
                    raise AssertionError(f"torch.{name} accepted {a.device}, {b.device}")
                sim.reset_stats()
                try:
                    getattr(ops, name)(a, b, out=out)
                except Exception as e:
                    assert type(e) is theirs, (name, type(e), theirs, e)
                else:
                    raise AssertionError(f"ops.{name} accepted {a.device}, {b.device}")
                assert bool((out.cpu() == 0).all()), (name, "out was written")
        print("mixed ok")
        """,
    )


@pytest.mark.no_sanitizer(
    "expects the exact SIGSEGV, which ASan takes and reports as its own"
)
def test_host_code_reading_device_memory_faults(sim_build):
    """The protection works: host code dereferencing a device pointer (what
    a wrong wrapper would do) kills the process at once, while the backend's
    own copy reads it."""
    proc = run(
        sim_build,
        """
        import ctypes
        x = torch.full((4,), 7.0, device="sim")
        assert x.cpu().tolist() == [7.0] * 4
        assert sim.protection_enabled()
        print("reading", flush=True)
        ctypes.c_float.from_address(x.data_ptr()).value
        print("read without a fault", flush=True)
        """,
    )
    assert "reading" in proc.stdout and "read without a fault" not in proc.stdout
    assert proc.returncode == -11, (proc.returncode, proc.stderr[-2000:])


def test_dispatcher_ops_on_sim_tensors(sim_build):
    """torch.ops.infiniops on sim tensors: opcheck's tests and
    torch.compile(backend="aot_eager") with no graph break; the trace names
    the device."""
    ok(
        sim_build,
        """
        from torch.library import opcheck
        # torch's autograd_registration_check has no devices but CPU, CUDA
        # and XPU ("NYI devices other than CPU/CUDA/XPU"): the other three.
        tests = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic")
        x = torch.randn(4, 6).to("sim")
        y = torch.randn(4, 6).to("sim")
        w = torch.randn(6).to("sim")
        lib = torch.ops.infiniops
        cases = [
            (lib.add.Tensor, (x, y), {"alpha": 2}),
            (lib.add.out, (x, y), {"out": torch.empty(4, 6, device="sim")}),
            (lib.abs.default, (x,), {}),
            (lib.rms_norm.default, (x, w, 1e-6), {}),
            (lib.silu_and_mul.default, (x,), {}),
        ]
        for op, args, kwargs in cases:
            result = opcheck(op, args, kwargs, test_utils=tests)
            assert all(v == "SUCCESS" for v in result.values()), (op, result)

        def f(a, b):
            return torch.ops.infiniops.add(a, b) * 2
        compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
        a = torch.randn(8).to("sim"); b = torch.randn(8).to("sim")
        torch.testing.assert_close(compiled(a, b).cpu(), (a.cpu() + b.cpu()) * 2)

        from infiniops_codegen.runtime.observe import trace
        with trace(ops) as t:
            ops.abs(a, out=torch.empty(8, device="sim"))
        assert t.records[0]["device"].startswith("sim"), t.records
        """,
    )


def test_a_module_linked_against_another_sim_build_is_refused(sim_build, tmp_path):
    """The build records where the port's package was (torch-ports.json):
    the loader imports the port and refuses a module whose record names
    another build of it (the simulated accelerator rebuilt since), instead
    of letting two builds of one backend meet in the process."""
    import json

    import infiniops_codegen.sim as port
    from infiniops_codegen.runtime.loader import _import_ports

    record = json.loads((sim_build / "torch-ports.json").read_text())
    assert record == [
        {"module": "infiniops_codegen.sim", "cmake_prefix_path": port.cmake_prefix_path}
    ]
    stale = tmp_path / "build"
    stale.mkdir()
    (stale / "torch-ports.json").write_text(
        json.dumps(
            [{"module": "infiniops_codegen.sim", "cmake_prefix_path": "/elsewhere"}]
        )
    )
    with pytest.raises(
        ImportError, match="linked against infiniops_codegen.sim built in /elsewhere"
    ):
        _import_ports(stale, "infiniops")
    _import_ports(sim_build, "infiniops")  # its own record: accepted
