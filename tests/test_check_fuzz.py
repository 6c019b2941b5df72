"""A kernel author's loop on a project as `init` writes it, one project
built once, its kernel swapped and rebuilt (a few seconds each):

- `infiniops-codegen check` and its native-kernel fuzzer pass with no file
  of the project's, and the fuzzer catches a deliberately wrong kernel (one
  element short; inputs read as if contiguous);
- a kernel that drops a helper's decline and reports success raises at the
  call, on the default path and with implementation="native"
  (core/decline.h; the compile-time half is tests/test_kernel_contract.py);
- a kernel source deleted in a directory that built before stops the build
  with the file and the spec's location, not Ninja's "cannot make progress"
  (the fresh-directory cases: tests/test_missing_kernel_source.py).
"""

import os
import re
import subprocess
import sys

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
    return true;
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
    return true;
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


# elementwise_ok declines an out of another dtype than self's; this body
# drops that, then reads float32 input as float16 (out's dtype) and reports
# success.
DROPS_A_DECLINE = """
  (void)elementwise_ok(out, {&self});
  if (!(self.shape() == out.shape())) return decline("out's shape is not self's shape");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    unary_loop<decltype(tag)>(self, out, [](float x) { return x < 0.0f ? 0.0f : x; });
    return true;
  });
"""
CALLS = """\
import sys, torch
from infiniops_codegen.runtime import load
m = load(sys.argv[1])
x = torch.randn(64)
for impl in ("default", "native"):
    out = torch.empty(64, dtype=torch.float16)
    try:
        m.relu(x, out=out, implementation=impl)
    except RuntimeError as e:
        print(impl, type(e).__name__, e)
    else:
        print(impl, "returned")
    out = torch.empty(64)  # the next call is not blamed for the last one
    m.relu(x, out=out)
    torch.testing.assert_close(out, x.relu())
"""
DROPPED = (
    "relu(): the native cpu kernel (native::cpu::relu) reported success after one "
    'of its helpers declined the call ("the tensors are not all CPU tensors of one '
    'dtype") and the kernel dropped that result, so the output was not computed. '
    "In the kernel, return the helper's result (`return binary_loop<T>(...);`) or "
    "test it (`if (auto r = elementwise_ok(...); !r) return r;`)"
)


def test_a_kernel_that_drops_a_decline_and_reports_success_raises(project):
    kernel = project / "cpp" / "kernels" / "cpu" / "relu.cc"
    scaffold = kernel.read_text()
    kernel.write_text(_with_body(scaffold, DROPS_A_DECLINE))
    try:
        _build(project)
        done = _run([sys.executable, "-c", CALLS, str(project / "build")], project)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.splitlines() == [
            f"default RuntimeError {DROPPED}",
            f"native RuntimeError {DROPPED}",
        ]
    finally:
        kernel.write_text(scaffold)


def test_a_directory_that_built_before_names_the_missing_source(project):
    kernel = project / "cpp" / "kernels" / "cpu" / "relu.cc"
    scaffold = kernel.read_text()
    _build(project)
    kernel.unlink()
    try:
        done = _run(_tool("build"), project)
        assert done.returncode == 1, done.stdout + done.stderr
        said = (done.stdout + done.stderr).strip().splitlines()
        assert re.fullmatch(
            r"error: op_specs/ops\.yaml:\d+:\d+: relu has a native cpu kernel, but "
            r"its source cpp/kernels/cpu/relu\.cc does not exist: write it "
            r"\(docs/adding-an-op\.md\), or remove cpu from relu's 'native' to "
            r"build the op without it",
            said[-1],
        ), said
        assert not any("ninja" in l or "CMake" in l for l in said), said
    finally:
        kernel.write_text(scaffold)
