"""`infiniops-codegen check` and its native-kernel fuzzer on a project as
`init` writes it: both pass with no file of the project's, and the fuzzer
catches a deliberately wrong kernel (one element short; inputs read as if
contiguous). One project, built once, its kernel swapped and rebuilt.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.own_build(
    "builds a project made by init, then rebuilds it with wrong kernels"
)

# Bodies of relu's kernel that are wrong, each its own way; the signature
# stays the scaffold's (generated/native_kernels.h declares it).
OFF_BY_ONE = """
  if (auto ok = elementwise_ok(out, {&self}); !ok) return ok;
  if (!(self.shape() == out.shape())) return decline("out's shape is not self's shape");
  if (!self.is_contiguous() || !out.is_contiguous()) return decline("strided");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(self.data());
    T* o = static_cast<T*>(out.data());
    for (int64_t i = 0; i + 1 < self.numel(); ++i) {  // the last one is left out
      float v = to_float(x[i]);
      o[i] = from_float<T>(v < 0.0f ? 0.0f : v);
    }
  });
"""
IGNORES_STRIDES = """
  if (auto ok = elementwise_ok(out, {&self}); !ok) return ok;
  if (!(self.shape() == out.shape())) return decline("out's shape is not self's shape");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(self.data());
    T* o = static_cast<T*>(out.data());
    for (int64_t i = 0; i < self.numel(); ++i) {  // as if both were contiguous
      float v = to_float(x[i]);
      o[i] = from_float<T>(v < 0.0f ? 0.0f : v);
    }
  });
"""


def _run(argv, cwd):
    env = {k: v for k, v in os.environ.items() if k != "INFINIOPS_BUILD_DIR"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )


def _tool(*args):
    return [sys.executable, "-m", "infiniops_codegen.cli", *args]


def _with_body(source: str, body: str) -> str:
    """The scaffold's relu.cc with the function's body replaced."""
    found = re.search(
        r"(\n\S[^\n]*\brelu\(const Tensor& self, Tensor& out\) \{\n)", source
    )
    assert found, "the scaffold's relu kernel has another signature"
    end = source.index("\n}\n", found.end())
    return source[: found.end()] + body + source[end:]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("check") / "demo"
    done = _run(_tool("init", str(root), "--name", "fuzzdemo"), root.parent)
    assert done.returncode == 0, done.stderr
    return root


def _build(root):
    done = _run(_tool("build"), root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_check_and_fuzzer_pass_on_the_scaffold_and_catch_wrong_kernels(project):
    _build(project)
    assert not (project / "tests" / "skips.yaml").exists()
    done = _run(_tool("check", "--fuzz", "--examples", "60"), project)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "harness: 3 ops: 3 passed" in done.stdout, done.stdout
    assert "passed: relu:" in done.stdout, done.stdout
    kernel = project / "cpp" / "kernels" / "cpu" / "relu.cc"
    scaffold = kernel.read_text()
    for name, body in [("off by one", OFF_BY_ONE), ("strides", IGNORES_STRIDES)]:
        kernel.write_text(_with_body(scaffold, body))
        _build(project)
        fuzzed = _run(_tool("check", "--fuzz-only", "--examples", "60"), project)
        assert fuzzed.returncode == 1, (name, fuzzed.stdout, fuzzed.stderr[-2000:])
        assert "failed: relu:" in fuzzed.stdout, (name, fuzzed.stdout)
        assert "differs from PyTorch" in fuzzed.stdout or "memory after" in (
            fuzzed.stdout
        ), (name, fuzzed.stdout)
