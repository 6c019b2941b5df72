"""Extensions (infiniops_codegen/opspec/extensions.py): op specs and native kernels
from a directory outside the project, added with --extension. An extension
in a temporary directory adds one ATen op, one composite and one native CPU
kernel; the built module has them, `list` shows them, the correctness
harness passes them; rebuilding without the extension removes them. The
manifest's mistakes and a clash with the project's op names are located
errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.opspec import extensions
from infiniops_codegen.render import pipeline
from infiniops_codegen.base import project
from infiniops_codegen.base.errors import SpecErrors

REPO = Path(__file__).resolve().parent.parent
EXT_OPS = ("ext_scaled_add", "rad2deg", "signbit")

SPECS = """\
ops:
  - signbit.out
  - {aten: rad2deg.out, native: {cpu: [float32]}}
  - signature: "ext_scaled_add(Tensor input, Tensor other, float alpha=2.0, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [add]
    reference: "torch.add(input, other, alpha=alpha)"
    fallback: |
      at::add_out(out, input, other, alpha);
"""

# Written with the tool's helper headers, as the project's own kernels are.
KERNEL = """\
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

KernelResult rad2deg(const Tensor& self, Tensor& out) {
  if (auto ok = elementwise_ok(out, {&self}); !ok) return ok;
  if (!(self.shape() == out.shape())) return decline("out's shape is not self's shape");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    unary_loop<T>(self, out, [](float x) { return x * 57.295779513082320876f; });
    return true;
  });
}

}  // namespace infini::ops::native::cpu
"""


def _extension(
    root: Path, manifest: str = "name: demo_ext\n", specs: str = SPECS
) -> Path:
    (root / "op_specs").mkdir(parents=True)
    (root / "kernels" / "cpu").mkdir(parents=True)
    (root / "infiniops-extension.yaml").write_text(manifest)
    (root / "op_specs" / "demo.yaml").write_text(specs)
    (root / "kernels" / "cpu" / "rad2deg.cc").write_text(KERNEL)
    return root


def _errors(call) -> list[str]:
    with pytest.raises(SpecErrors) as e:
        call()
    return [str(err) for err in e.value.errors]


# --- The manifest and the specs (no build) ------------------------------------


def test_manifest_defaults(tmp_path):
    ext = extensions.load(_extension(tmp_path / "ext"))
    assert ext.name == "demo_ext"
    assert ext.specs == (tmp_path / "ext" / "op_specs").resolve()
    assert ext.kernels == (tmp_path / "ext" / "kernels").resolve()


@pytest.mark.parametrize(
    "manifest, where, message",
    [
        ("specs: op_specs\n", "1:1", "needs 'name'"),
        ("name: demo-ext\n", "1:7", "is not an identifier"),
        ("name: x\nkernel: k\n", "2:1", "unknown key 'kernel'"),
        ("name: x\nspecs: ../elsewhere\n", "2:8", "leaves the extension ('..')"),
        ("name: x\nkernels: /abs/k\n", "2:10", "is absolute"),
        (
            "name: x\nspecs: nowhere\n",
            "2:8",
            "specs directory 'nowhere' does not exist",
        ),
        ("name: [x\n", "1:7", "never closed"),
    ],
)
def test_manifest_errors_are_located(tmp_path, manifest, where, message):
    root = _extension(tmp_path / "ext", manifest)
    errors = _errors(lambda: extensions.load(root))
    assert any(
        f"infiniops-extension.yaml:{where}: " in e and message in e for e in errors
    ), errors


def test_not_an_extension(tmp_path):
    (tmp_path / "empty").mkdir()
    errors = _errors(lambda: extensions.load(tmp_path / "empty"))
    assert "not an extension: infiniops-extension.yaml not found" in errors[0]


def test_a_name_the_project_has_is_a_located_error(tmp_path):
    specs = "ops:\n  - signbit.out\n  - abs.out\n"
    ext = extensions.load(_extension(tmp_path / "ext", specs=specs))
    errors = _errors(
        lambda: pipeline.load_opset(REPO / "op_specs", None, extensions=(ext,))
    )
    clash = [e for e in errors if "duplicate op name 'abs'" in e]
    assert clash, errors
    # at the extension's entry (line 3, col 5), naming the project's entry
    assert "demo.yaml:3:5: " in clash[0] and "op_specs/llm.yaml:" in clash[0], clash


def test_two_extensions_with_one_name(tmp_path):
    a = _extension(tmp_path / "a")
    b = _extension(tmp_path / "b")
    errors = _errors(lambda: extensions.load_all([a, b]))
    assert "extension 'demo_ext' is given twice" in errors[0]


def test_settings_belong_to_the_project(tmp_path):
    specs = SPECS + "settings:\n  shard_size: 4\n"
    ext = extensions.load(_extension(tmp_path / "ext", specs=specs))
    errors = _errors(
        lambda: pipeline.load_opset(REPO / "op_specs", "abs", extensions=(ext,))
    )
    assert any("settings belong to the project's specs" in e for e in errors), errors


def test_every_extension_op_joins_a_selection(tmp_path):
    ext = extensions.load(_extension(tmp_path / "ext"))
    opset = pipeline.load_opset(REPO / "op_specs", "abs", extensions=(ext,))
    assert [op.name for op in opset.ops] == sorted(("abs",) + EXT_OPS)
    assert {op.name: op.extension for op in opset.ops}["rad2deg"] == "demo_ext"
    assert ("cpu", ("rad2deg@demo_ext",)) in opset.native_kernel_ops
    sources = {op.name: op.source for op in opset.ops}
    assert sources["signbit"] == "demo_ext/op_specs/demo.yaml"


def test_generation_with_an_extension_is_not_the_default_set(tmp_path):
    proj = project.load(REPO)
    request = builder.BuildRequest(
        project=proj, build_dir=tmp_path / "b", extensions=(tmp_path / "ext",)
    )
    assert builder.generated_dir_for(request) == tmp_path / "b" / "generated"


# --- Built, checked, removed --------------------------------------------------


def _module_ops(build_dir: Path) -> dict:
    code = textwrap.dedent(f"""
        import json, torch
        from infiniops_codegen.runtime import load
        m = load({str(build_dir)!r})
        result = {{"implementations": m.implementations()}}
        if hasattr(m, "rad2deg"):
            x = torch.linspace(-3, 3, 7); out = torch.empty(7)
            m.rad2deg(x, out=out, implementation="native")
            torch.testing.assert_close(out, torch.rad2deg(x))
            a, b = torch.randn(3, 4), torch.randn(4)
            out = torch.empty(3, 4)
            m.ext_scaled_add(a, b, out=out)
            torch.testing.assert_close(out, a + 2 * b)
            result["called"] = True
        print(json.dumps(result))
        """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.own_build("a build of its own: a project with an extension")
def test_an_extension_is_built_listed_checked_and_removed(tmp_path, runner, helpers):
    ext = _extension(tmp_path / "ext")
    build_dir = tmp_path / "build"
    proj = project.load(REPO)
    lines: list[str] = []
    result = builder.build(
        builder.BuildRequest(
            project=proj, build_dir=build_dir, ops="abs", extensions=(ext,), jobs=2
        ),
        echo=lines.append,
    )
    assert sorted(result.ops) == sorted(("abs",) + EXT_OPS)
    # the extension's kernel, and no kernel of the project (abs has none)
    kernels = [l for l in lines if "kernels/cpu/" in l]
    assert len(kernels) == 1 and "rad2deg.cc" in kernels[0], lines

    ops = _module_ops(build_dir)
    assert ops.get("called"), ops
    assert ops["implementations"]["rad2deg"]["cpu"] == ["native", "torch"]
    assert set(ops["implementations"]) == {"abs", *EXT_OPS}

    listed = helpers.invoke(runner, "list", "--build-dir", build_dir)
    assert listed.exit_code == 0, listed.output
    assert (
        "extension demo_ext: 3 ops (ext_scaled_add, rad2deg, signbit)" in listed.output
    )
    detail = helpers.invoke(runner, "list", "--build-dir", build_dir, "--op", "signbit")
    assert "demo_ext/op_specs/demo.yaml, extension demo_ext" in detail.output

    report = tmp_path / "harness.json"
    harness = subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.harness",
            "--build-dir",
            str(build_dir),
        ]
        + ["--skips", str(REPO / "tests" / "skips.yaml"), "--report", str(report)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert harness.returncode == 0, harness.stdout[-3000:] + harness.stderr[-3000:]
    results = json.loads(report.read_text())["results"]
    for name in EXT_OPS:
        assert results[name]["status"] == "passed", (name, results[name])

    # Without the extension, the same build directory loses its ops.
    again = builder.build(
        builder.BuildRequest(project=proj, build_dir=build_dir, ops="abs", jobs=2),
        echo=lambda line: None,
    )
    assert again.ops == ("abs",)
    assert set(_module_ops(build_dir)["implementations"]) == {"abs"}
