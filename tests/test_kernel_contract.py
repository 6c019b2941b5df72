"""The native kernels' contract (core/decline.h, docs/adding-an-op.md): a
kernel returns a KernelResult, and so does every helper that can decline.

- Dropping a helper's result does not compile, with a message that says what
  to do: each kernel source is compiled as the suite's build compiles it
  (its compile_commands.json entry, -fsyntax-only), so the flags are the
  CMake project's, not the test's.
- A dispatch_floating whose function returns nothing does not compile.
- A kernel written for the old `bool` return type gets the compiler's error
  and the build's hint.
- A kernel that drops a decline (a `(void)` cast) and reports success raises
  at its first such call, on the default path and with
  implementation="native": tests/test_check_fuzz.py (an `own_build` test,
  on the project it builds).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder

REPO = Path(__file__).resolve().parent.parent

HEADERS = """\
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {
"""

# mul's kernel, with the mistake under test in its body.
DROPPED = HEADERS + textwrap.dedent("""\
    KernelResult mul(const Tensor& input, const Tensor& other, Tensor& out) {
      if (auto ok = elementwise_ok(out, {&input, &other}); !ok) return ok;
      return dispatch_floating(out.dtype(), [&](auto tag) -> KernelResult {
        using T = decltype(tag);
        binary_loop<T>(input, other, out, [](float x, float y) { return x * y; });
        return true;
      });
    }
    }  // namespace infini::ops::native::cpu
    """)

VOID_FUNCTION = HEADERS + textwrap.dedent("""\
    KernelResult silu(const Tensor& input, Tensor& out) {
      if (auto ok = elementwise_ok(out, {&input}); !ok) return ok;
      return dispatch_floating(out.dtype(), [&](auto tag) {
        unary_loop<decltype(tag)>(input, out, [](float x) { return x; });
      });
    }
    }  // namespace infini::ops::native::cpu
    """)

OLD_RETURN_TYPE = HEADERS + textwrap.dedent("""\
    bool silu(const Tensor& input, Tensor& out) { return false; }
    }  // namespace infini::ops::native::cpu
    """)


@pytest.fixture(scope="module")
def kernel_command(ops):
    """How the suite's build compiles cpp/kernels/cpu/mul.cc: (directory,
    arguments), the source and the object left out."""
    from runtime_conftest_helpers import build_dir

    entries = json.loads((build_dir() / "compile_commands.json").read_text())
    entry = next(e for e in entries if e["file"].endswith("cpp/kernels/cpu/mul.cc"))
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-c", "-MF", "-MT", "-MQ"):
            skip = a != "-c"
        elif a != entry["file"] and a not in ("-MD", "-MMD"):
            kept.append(a)
    return entry["directory"], kept


def _compile(
    kernel_command, tmp_path: Path, source: str
) -> subprocess.CompletedProcess:
    directory, args = kernel_command
    path = tmp_path / "kernel.cc"
    path.write_text(source)
    return subprocess.run(
        [*args, "-fsyntax-only", str(path)],
        cwd=directory,
        capture_output=True,
        text=True,
    )


def test_the_build_compiles_kernels_with_unused_results_an_error(
    kernel_command, tmp_path
):
    proc = _compile(kernel_command, tmp_path, DROPPED)
    assert proc.returncode != 0, proc.stderr
    assert "error: ignoring returned value of type" in proc.stderr, proc.stderr
    assert "[-Werror=unused-result]" in proc.stderr
    assert (
        "a kernel's helper can decline the call: return its result "
        "(`return binary_loop<T>(...);`) or test it" in proc.stderr
    )
    # The same kernel returning the helper's result compiles.
    fixed = DROPPED.replace(
        "    binary_loop<T>(input", "    return binary_loop<T>(input"
    ).replace("    return true;\n", "")
    proc = _compile(kernel_command, tmp_path, fixed)
    assert proc.returncode == 0, proc.stderr


def test_dispatch_floating_refuses_a_function_that_returns_nothing(
    kernel_command, tmp_path
):
    proc = _compile(kernel_command, tmp_path, VOID_FUNCTION)
    assert proc.returncode != 0
    assert "dispatch_floating: the function must return the kernel's result" in (
        proc.stderr
    ), proc.stderr


def test_a_kernel_of_the_old_return_type_gets_the_hint(kernel_command, tmp_path):
    proc = _compile(kernel_command, tmp_path, OLD_RETURN_TYPE)
    assert proc.returncode != 0
    block = ["FAILED: CMakeFiles/infiniops_kernels_cpu.dir/kernel.cc.o", "cmd"]
    block += proc.stderr.splitlines()
    report = builder._compile_error(block, {})
    assert "ambiguating new declaration of" in report, report
    assert "bool infini::ops::native::cpu::silu(" in report
    assert report.splitlines()[-1] == builder.OLD_KERNEL_HINT
