"""`build --compiler-launcher`: a distributed compiler front before the C++
compiler. A distccd listening on 127.0.0.1 only (started and stopped here)
takes every compile of a small selective build, the precompiled header and
the wrapper shard included; the module passes the smoke call."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from environment_skips import requires

from infiniops_codegen.toolchain import builder
from infiniops_codegen.base import project

REPO = Path(__file__).resolve().parent.parent

pytestmark = [
    requires("distccd"),
    pytest.mark.own_build(
        "every compile through a distcc daemon: the bridge too, past every cache"
    ),
]


@pytest.fixture(autouse=True)
def _compile_the_bridge_too(monkeypatch):
    """The suite's shared bridge cache (tests/conftest.py) would give these
    builds the bridge and the precompiled header without a compile: here
    every compile step, those included, must go through the daemon."""
    monkeypatch.setenv("INFINIOPS_NO_BRIDGE_CACHE", "1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def distccd(tmp_path):
    """(port, log path) of a daemon on 127.0.0.1 only, for this test."""
    port = _free_port()
    log = tmp_path / "distccd.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["distccd", "--no-detach", "--log-stderr", "--log-level", "info"]
            + ["--listen", "127.0.0.1", "--allow", "127.0.0.1", "--port", str(port)]
            + ["--jobs", "2"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 20
        while "listening on" not in log.read_text():
            assert proc.poll() is None, f"distccd exited:\n{log.read_text()}"
            assert (
                time.monotonic() < deadline
            ), f"distccd did not start:\n{log.read_text()}"
            time.sleep(0.1)
        yield port, log
    finally:
        os.killpg(proc.pid, 15)  # the daemon's preforked children too
        proc.wait(timeout=20)


def test_every_compile_goes_through_the_daemon(distccd, tmp_path, monkeypatch):
    port, log = distccd
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    monkeypatch.setenv("DISTCC_FALLBACK", "0")  # a failed remote compile fails
    monkeypatch.setenv("DISTCC_LOG", str(tmp_path / "client.log"))
    lines = []
    result = builder.build(
        builder.BuildRequest(
            project=project.load(REPO),
            build_dir=tmp_path / "build",
            ops="abs,add",  # an ATen op, and one with a native CPU kernel
            ccache=False,
            compiler_launcher=("distcc",),
            jobs=2,
        ),
        echo=lines.append,
    )
    assert result.smoke.startswith("add ok"), result.smoke
    compiled = [l for l in lines if " compile " in l or "precompile" in l]
    served = [l for l in log.read_text().splitlines() if "COMPILE_OK" in l]
    # Each compile step of the build is one job the daemon completed: the
    # bridge, the precompiled header, the shard, the dispatch and bindings
    # TUs, the stream guards, and add's kernel (only the selected op's).
    assert len(served) == len(compiled), (lines, served)
    assert any("cmake_pch.hxx" in l for l in served), served
    assert any("shard_000.cpp" in l for l in served), served
    assert any("kernels/cpu/add.cc" in l for l in served), served
    assert not any("kernels/cpu/mul.cc" in l for l in served), served


def test_behind_ccache_the_front_is_its_prefix_and_the_pch_is_off(monkeypatch):
    """With ccache, the front runs as its CCACHE_PREFIX (hits stay local),
    and the precompiled header is off: ccache's PCH mode names the .gch in
    what it sends, which a helper does not have."""
    monkeypatch.setattr(builder.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    config = builder.BuildConfig(
        build_dir=Path("b"), generated_dir=Path("g"), compiler_launcher=("distcc",)
    )
    args = config.cmake_args()
    launcher = next(a for a in args if a.startswith("-DCMAKE_CXX_COMPILER_LAUNCHER="))
    assert launcher.endswith(";CCACHE_PREFIX=distcc;/usr/bin/ccache")
    assert "-DINFINI_OPS_PCH=OFF" in args
    plain = builder.BuildConfig(build_dir=Path("b"), generated_dir=Path("g"))
    assert "-DINFINI_OPS_PCH=OFF" not in plain.cmake_args()  # ccache alone keeps it
    alone = builder.BuildConfig(
        build_dir=Path("b"),
        generated_dir=Path("g"),
        ccache=False,
        compiler_launcher=("distcc",),
    )
    assert "-DCMAKE_CXX_COMPILER_LAUNCHER=distcc" in alone.cmake_args()
    assert "-DINFINI_OPS_PCH=OFF" not in alone.cmake_args()  # distcc alone keeps it


@requires("ccache")
def test_behind_ccache_misses_travel_and_hits_stay(distccd, tmp_path, monkeypatch):
    port, log = distccd
    monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")
    monkeypatch.setenv("DISTCC_FALLBACK", "0")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    request = builder.BuildRequest(
        project=project.load(REPO),
        build_dir=tmp_path / "build",
        ops="abs,add",
        ccache=True,
        compiler_launcher=("distcc",),
        jobs=2,
    )
    result = builder.build(request, echo=lambda line: None)
    assert result.smoke.startswith("add ok"), result.smoke
    served = sum("COMPILE_OK" in l for l in log.read_text().splitlines())
    assert served >= 6, log.read_text()[-2000:]  # bridge, shard, ops, bindings, ...
    subprocess.run(["ninja", "-C", str(tmp_path / "build"), "-t", "clean"], check=True)
    again = builder.build(request, echo=lambda line: None)
    assert again.smoke.startswith("add ok")
    after = sum("COMPILE_OK" in l for l in log.read_text().splitlines())
    assert after == served, "a rebuild from ccache's hits sent compiles to the daemon"
