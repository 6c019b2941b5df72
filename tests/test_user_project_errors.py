"""Errors a user meets in a project of their own (docs/projects.md), each
checked for the message: a native kernel declared in the specs whose source
is not written yet (`generate` warns, `list` marks it), the platforms `list`
shows, `list --op` of a name the manifest lacks, and a kernel whose
signature does not match its declaration (the link error, with the
declaration and the signature it must have).

Small projects in temporary directories; only the last test compiles.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.base import project as projects
from infiniops_codegen.base.platforms import platform_names

SPECS = {"ops.yaml": "ops:\n  - abs.out\n  - {aten: neg.out, native: [cpu]}\n"}
NEG_KERNEL = """\
#include "native_kernels.h"

namespace infini::ops::native::cpu {

// Declines every call: the fallback computes it.
KernelResult neg(const Tensor& self, Tensor& out) { return false; }

}  // namespace infini::ops::native::cpu
"""


@pytest.fixture
def proj(tmp_path, helpers) -> Path:
    """A project whose spec gives neg a CPU kernel it has not written yet."""
    return helpers.project(tmp_path / "proj", SPECS)


def _generate(runner, helpers, root: Path):
    result = helpers.invoke(runner, "--project", root, "generate")
    assert result.exit_code == 0, result.output
    return result


# --- a native kernel the project has not written yet ------------------------------


def test_generate_warns_of_a_kernel_source_not_written(proj, runner, helpers):
    result = _generate(runner, helpers, proj)
    assert (
        "warning: op_specs/ops.yaml: the spec of neg gives it a native cpu kernel, "
        "but cpp/kernels/cpu/neg.cc does not exist yet: write it "
        "(docs/adding-an-op.md), or 'build' stops before it configures"
    ) in result.output.splitlines()
    # written: the warning goes away
    helpers.project(proj, {}, {"cpu/neg.cc": NEG_KERNEL})
    assert "warning" not in _generate(runner, helpers, proj).output


def test_list_marks_a_native_op_without_its_kernel_source(proj, runner, helpers):
    _generate(runner, helpers, proj)
    result = helpers.invoke(runner, "--project", proj, "list")
    assert result.exit_code == 0, result.output
    rows = {ln.split()[0]: ln.split()[1:] for ln in result.output.splitlines()[1:3]}
    assert rows == {"abs": ["torch"], "neg": ["no-source"]}
    assert (
        "  cpu  1 native, 1 torch, 0 missing" not in result.output
        and "  cpu        0 native, 1 torch, 0 missing, 1 without its kernel source"
        in result.output
    ), result.output
    assert (
        "no-source: cpu: the spec of neg gives it a native kernel, but "
        "cpp/kernels/cpu/neg.cc does not exist yet ('build' stops at CMake "
        "configure until it is written)"
    ) in result.output.splitlines()
    data = json.loads(
        helpers.invoke(runner, "--project", proj, "list", "--json").output
    )
    assert data["ops"]["neg"] == {"cpu": "no-source"}
    assert data["counts"]["cpu"]["no-source"] == 1
    detail = helpers.invoke(runner, "--project", proj, "list", "--op", "neg").output
    assert re.search(r"^    cpu  no-source, torch$", detail, re.M), detail
    # written: native
    helpers.project(proj, {}, {"cpu/neg.cc": NEG_KERNEL})
    after = helpers.invoke(runner, "--project", proj, "list", "--json").output
    assert json.loads(after)["ops"]["neg"] == {"cpu": "native"}


# --- the platforms list shows ------------------------------------------------------


def test_list_shows_the_platforms_that_matter(proj, runner, helpers):
    """No build: cpu (a build's default) and the platforms with a native
    kernel; the others named once, after the table."""
    _generate(runner, helpers, proj)
    lines = helpers.invoke(runner, "--project", proj, "list").output.splitlines()
    assert lines[0].split() == ["op", "cpu"]
    assert lines[-1] == (
        f"not shown: {', '.join(platform_names()[1:])} (no op has a native kernel "
        "there: the torch fallback where built; --platform all shows them)"
    )
    args = ("--project", proj, "list", "--platform", "cpu,nvidia", "--json")
    data = json.loads(helpers.invoke(runner, *args).output)
    assert data["platforms"] == ["cpu", "nvidia"]
    assert data["ops"]["abs"] == {"cpu": "torch", "nvidia": "torch"}
    assert data["platforms_not_shown"] == list(platform_names()[2:])


def test_list_of_a_cpu_only_build_shows_cpu_only(proj, runner, helpers, tmp_path):
    """A build directory's own platforms (its CMake cache's WITH_<P> flags)."""
    _generate(runner, helpers, proj)
    build = tmp_path / "build"
    build.mkdir()
    (build / "manifest.json").write_text(
        (proj / "generated" / "manifest.json").read_text()
    )
    flags = [
        f"WITH_{p.upper()}:BOOL={'ON' if p == 'cpu' else 'OFF'}"
        for p in platform_names()
    ]
    (build / "CMakeCache.txt").write_text("# cache\n" + "\n".join(flags) + "\n")
    assert builder.built_platforms(build) == ("cpu",)
    lines = helpers.invoke(runner, "list", "--build-dir", build).output.splitlines()
    assert lines[0].split() == ["op", "cpu"]
    assert lines[-1].startswith(f"not shown: {', '.join(platform_names()[1:])} (")
    assert "was not configured for them" in lines[-1]


def test_list_rejects_an_unknown_platform(proj, runner, helpers):
    _generate(runner, helpers, proj)
    result = helpers.invoke(runner, "--project", proj, "list", "--platform", "cpux")
    assert result.exit_code == 2
    assert result.output.startswith("error: --platform cpux: unknown platform cpux;")


# --- list --op of a name the manifest lacks ---------------------------------------


@pytest.mark.parametrize(
    "name, hint",
    [
        # a close name: difflib's suggestion
        ("nge", "; did you mean 'neg'?"),
        # nothing close: where to look
        (
            "nosuch",
            "; 'infiniops-codegen list' shows the 2 ops, 'list --available "
            "--match nosuch' the ATen overloads the specs could add",
        ),
        # an ATen op the specs do not have
        (
            "hypot",
            "; ATen has hypot.out: add it to the specs as '- hypot.out' "
            "(docs/adding-an-op.md)",
        ),
    ],
)
def test_list_op_not_in_the_manifest_says_where_to_look(
    proj, runner, helpers, name, hint
):
    _generate(runner, helpers, proj)
    result = helpers.invoke(runner, "--project", proj, "list", "--op", name)
    assert result.exit_code == 2
    assert result.output.strip() == f"error: no op '{name}' in the manifest{hint}"


# --- a kernel whose signature is not its declaration's -----------------------------

# `Tensor out` where the declaration has `Tensor& out`: an overload, which
# compiles; the declared function stays undefined and the link fails.
MISMATCHED_KERNEL = NEG_KERNEL.replace(
    "KernelResult neg(const Tensor& self, Tensor& out) { return false; }",
    "KernelResult neg(const Tensor& self,\n         Tensor out) {\n  return false;\n}",
)
UNDEFINED_NEG = (
    "undefined reference to `infini::ops::native::cpu::neg(infini::ops::Tensor "
    "const&, infini::ops::Tensor&)'"
)
# GNU ld's lines of the failed link step, as Ninja prints them.
LINK_FAILURE = [
    "[40/42] Linking CXX shared library libinfiniops.so",
    "FAILED: libinfiniops.so ",
    ": && /usr/bin/c++ -fPIC -O3 -shared -o libinfiniops.so @objects.rsp && :",
    "/usr/bin/ld: CMakeFiles/infiniops_dispatch.dir/generated/ops.cpp.o: in "
    "function `infini::ops::neg(infini::ops::Tensor const&, infini::ops::Tensor&, "
    "infini::ops::Implementation, infini::ops::Stream)':",
    "ops.cpp:(.text+0x1d2): " + UNDEFINED_NEG,
    "collect2: error: ld returned 1 exit status",
    "ninja: build stopped: cannot make progress due to previous errors.",
]


def _expected_link_error(generated: str, kernel: str) -> str:
    declaration = next(
        (n, line)
        for n, line in enumerate(
            (Path(generated) / "native_kernels.h").read_text().splitlines(), 1
        )
        if line.startswith("KernelResult neg(")
    )
    return (
        "libinfiniops.so failed to link:\n"
        + UNDEFINED_NEG
        + "\n"
        + f"the cpu kernel of neg must define the function its declaration names "
        f"({generated}/native_kernels.h:{declaration[0]}, in namespace "
        "infini::ops::native::cpu), with the same parameter types, const and & "
        "(the names may differ):\n"
        "  KernelResult neg(const Tensor& self, Tensor& out);\n"
        f"{kernel}:6 defines another one: KernelResult neg(const Tensor& self, Tensor out)"
    )


def test_link_error_names_the_declaration_and_the_signature(
    tmp_path, helpers, runner, monkeypatch
):
    """The report of the linker's output (not only `collect2: error: ld
    returned 1 exit status`): the undefined kernel, its declaration and
    signature, and what the kernel source defines instead."""
    root = helpers.project(tmp_path / "proj", SPECS, {"cpu/neg.cc": MISMATCHED_KERNEL})
    _generate(runner, helpers, root)
    monkeypatch.chdir(root)  # paths are shown relative to it
    config = builder.BuildConfig(
        build_dir=root / "build",
        generated_dir=root / "generated",
        kernel_root=root / "cpp" / "kernels",
    )
    report = builder._compile_error(LINK_FAILURE, {}, config)
    assert report == "1 build step(s) failed\n" + _expected_link_error(
        "generated", "cpp/kernels/cpu/neg.cc"
    )
    assert "collect2" not in report


def test_another_link_error_shows_what_the_linker_said(tmp_path):
    """Not collect2's summary alone: the linker's own lines."""
    block = (
        LINK_FAILURE[:3]
        + [
            "/usr/bin/ld: CMakeFiles/k.dir/neg.cc.o: in function `f()':",
            "neg.cc:(.text+0x0): multiple definition of `f()'; "
            "CMakeFiles/k.dir/abs.cc.o:abs.cc:(.text+0x0): first defined here",
        ]
        + LINK_FAILURE[-2:]
    )
    config = builder.BuildConfig(build_dir=tmp_path, generated_dir=tmp_path)
    assert builder._compile_error(block, {}, config) == (
        "1 build step(s) failed\nlibinfiniops.so failed to link:\n" + block[4]
    )


@pytest.mark.own_build("a build of its own: a project whose kernel does not match")
def test_build_with_a_mismatched_kernel_fails_with_the_signature(tmp_path, helpers):
    """The same, from a real build of a small project (-v or not: the
    report is the BuildError's message)."""
    root = helpers.project(tmp_path / "proj", SPECS, {"cpu/neg.cc": MISMATCHED_KERNEL})
    request = builder.BuildRequest(
        project=projects.load(root), build_dir=tmp_path / "b", smoke=False, jobs=2
    )
    with pytest.raises(builder.BuildError) as caught:
        builder.build(request, echo=lambda line: None, verbose=True)
    gen = Path(builder._rel(root / "generated"))
    kernel = builder._rel(root / "cpp" / "kernels" / "cpu" / "neg.cc")
    summary, target, rest = str(caught.value).split("\n", 2)
    assert summary == "1 build step(s) failed"
    # the library's file, with its version (libinfiniops.so.0.1.0)
    assert re.fullmatch(r"libinfiniops\.so[.\d]* failed to link:", target), target
    expected = _expected_link_error(str(gen), kernel)
    assert rest == expected.split("\n", 1)[1], str(caught.value)


def test_not_found_hint_offers_ops_containing_the_name():
    from infiniops_codegen.model import coverage, manifest

    # this repository's manifest: several softmax ops
    ops = manifest.generated(Path(__file__).resolve().parent.parent / "generated")
    hint = coverage.not_found_hint("SOFTMAX_BACK", ops, ("softmax.out",))
    assert hint == (
        "; ops whose name contains it: _log_softmax_backward_data, "
        "_softmax_backward_data"
    )


def test_generate_warns_of_an_extensions_kernel_not_written(
    proj, tmp_path, runner, helpers
):
    """An extension's kernels are looked for in its own kernels directory."""
    ext = tmp_path / "ext"
    (ext / "op_specs").mkdir(parents=True)
    (ext / "infiniops-extension.yaml").write_text("name: demo_ext\n")
    (ext / "op_specs" / "demo.yaml").write_text(
        "ops:\n  - {aten: rad2deg.out, native: [cpu]}\n"
    )
    helpers.project(proj, {}, {"cpu/neg.cc": NEG_KERNEL})
    result = helpers.invoke(runner, "--project", proj, "generate", "--extension", ext)
    assert result.exit_code == 0, result.output
    warnings = [ln for ln in result.output.splitlines() if ln.startswith("warning")]
    kernel = ext.resolve() / "kernels" / "cpu" / "rad2deg.cc"
    assert warnings == [
        "warning: demo_ext/op_specs/demo.yaml: the spec of rad2deg gives it a "
        f"native cpu kernel, but {kernel} does not exist yet: write it "
        "(docs/adding-an-op.md), or 'build' stops before it configures"
    ]
