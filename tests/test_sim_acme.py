"""The host-compiler split, built, linked, loaded and run: the acme fixture
project (tests/fixtures/acme/) defines a platform of its own whose kernel
compiler refuses PyTorch's headers (`host_compiled_bridge: true`, as MetaX's
and Moore's) and whose tensors are the simulated accelerator's. Its add
kernel, compiled by that compiler, runs on sim tensors on the stream it is
given; the bridge and wrappers, host-compiled, run the rest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime_conftest_helpers import BUILD_TIMEOUT_S, subprocess_env

pytestmark = pytest.mark.own_build("the acme project built for cpu,acme")

ACME = Path(__file__).resolve().parent / "fixtures" / "acme"


@pytest.fixture(scope="module")
def acme_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("acme") / "acme"
    shutil.copytree(ACME, root)
    build = root / "build"
    cmd = [
        sys.executable, "-m", "infiniops_codegen.cli", "--project", str(root),
        "build", "--platform", "cpu,acme",
        "--kernel-compiler", f"acme={root / 'acme-cc'}",
    ]  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=root, env=subprocess_env(), capture_output=True, text=True,
        timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return build


def test_only_the_kernels_go_through_the_acme_compiler(acme_build):
    commands = json.loads((acme_build / "compile_commands.json").read_text())
    by_compiler: dict[str, list[str]] = {}
    for c in commands:
        compiler = Path(c.get("command", "").split()[0]).name
        by_compiler.setdefault(compiler, []).append(Path(c["file"]).name)
    assert by_compiler.get("acme-cc") == ["add.acme"], by_compiler
    # The torch bridge and the wrappers: the host compiler.
    host = [f for k, files in by_compiler.items() if k != "acme-cc" for f in files]
    assert "stream_guards.cpp" in host and "aten_convert.cpp" in host, host


def test_the_acme_kernel_runs_on_its_stream(acme_build):
    code = textwrap.dedent(f"""
        import torch
        import infiniops_codegen.sim
        from infiniops_codegen.runtime import load
        ops = load({str(acme_build)!r})
        assert "acme" in ops.platforms(), ops.platforms()
        sim = torch.sim
        a = torch.randn(64).to("sim:1")
        b = torch.randn(64).to("sim:1")
        out = torch.empty(64, device="sim:1")
        side = sim.Stream(device=1)
        ops.reset_stats(); sim.reset_stats()
        ops.add(a, b, alpha=2, out=out, stream=side, implementation="native")
        side.synchronize()
        assert sim.current_device() == 0
        s = sim.stats()
        assert s["device_to_host_copies"] == 0 and not s["fallback_runs"], s
        assert {{(k.implementation, k.path) for k in ops.stats()}} == {{("native", "handle")}}
        torch.testing.assert_close(out.cpu(), a.cpu() + 2 * b.cpu())
        # float64: the kernel declines, and the fallback answers.
        x = torch.randn(5, dtype=torch.float64).to("sim")
        y = torch.empty(5, dtype=torch.float64, device="sim")
        ops.add(x, x, out=y)
        torch.testing.assert_close(y.cpu(), 2 * x.cpu())
        ops.mul(x, x, out=y)
        torch.testing.assert_close(y.cpu(), x.cpu() * x.cpu())
        print("acme ok")
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "acme ok" in proc.stdout
