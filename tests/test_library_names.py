"""A library of one's own name (docs/projects.md, "The library's name"): the
project table's `name`, `namespace` and `cmake-package`, what generation
makes of them, and two libraries side by side: both modules in one Python
process, each with its own switches and wrapper pool, and both C++ libraries
in one program, exporting no symbol in common (`nm -D`).

The last group builds two small projects (about a minute each on two cores,
less with the bridge cache warm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from infiniops_codegen.toolchain import builder
from infiniops_codegen.base import project as projects

REPO = Path(__file__).resolve().parents[1]


def _pyproject(root: Path, table: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.infiniops-codegen]\n" + table
    )
    return root


# --- the table ---------------------------------------------------------------------


def test_a_table_without_a_name_keeps_the_historical_names(tmp_path):
    names = projects.load(_pyproject(tmp_path / "p", "")).names
    assert (names.name, names.namespace, names.cmake_package) == (
        "infiniops",
        "infini::ops",
        "InfiniOps",
    )
    assert names.cmake_target == "InfiniOps::infiniops"


def test_the_other_names_follow_name(tmp_path):
    names = projects.load(_pyproject(tmp_path / "p", 'name = "mylib"\n')).names
    assert (names.namespace, names.cmake_package, names.cmake_target) == (
        "mylib",
        "mylib",
        "mylib::mylib",
    )
    names = projects.load(
        _pyproject(
            tmp_path / "q",
            'name = "mylib"\nnamespace = "acme::ops"\ncmake-package = "MyLib"\n',
        )
    ).names
    assert (names.namespace, names.cmake_target) == ("acme::ops", "MyLib::mylib")


@pytest.mark.parametrize(
    "table, row, message",
    [
        (
            'name = "MyLib"',
            5,
            "'name' = 'MyLib' must be a lower-case identifier (letters, digits, "
            "'_'; a letter first), e.g. 'mylib'",
        ),
        ('name = "class"', 5, "'name' = 'class' is a Python or C++ keyword"),
        ('name = "torch"', 5, "'name' = 'torch' is a Python or C++ keyword or a name"),
        ("name = 3", 5, "'name' must be a string, e.g. 'mylib'"),
        (
            'name = "m"\nnamespace = "a::3b"',
            6,
            "'namespace' = 'a::3b' must be a C++ namespace",
        ),
        (
            'name = "m"\nnamespace = "infini::ops::m"',
            6,
            "'namespace' = 'infini::ops::m' nests inside the core's namespace",
        ),
        (
            'name = "m"\ncmake-package = "My-Lib"',
            6,
            "'cmake-package' = 'My-Lib' must be an identifier",
        ),
        ('namespace = "acme"', 5, "'namespace' needs 'name' beside it"),
    ],
)
def test_a_bad_name_is_refused_where_it_is_written(tmp_path, table, row, message):
    root = _pyproject(tmp_path / "p", table + "\n")
    with pytest.raises(projects.ProjectError) as caught:
        projects.load(root)
    text = str(caught.value)
    assert text.startswith(f"{root / 'pyproject.toml'}:{row}:1: "), text
    assert message in text


# --- what generation makes of them ---------------------------------------------------

SPECS = """\
ops:
  - abs.out
  - add.out
  - {aten: silu.out, native: {cpu: [float32]}}
  - signature: "twice(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"
    uses: [add]
    reference: "self * 2"
    fallback: |
      at::add_out(out, self, self);
"""
SILU_KERNEL = (REPO / "cpp" / "kernels" / "cpu" / "silu.cc").read_text()


def _generate(runner, helpers, root: Path) -> Path:
    result = helpers.invoke(runner, "--project", root, "generate")
    assert result.exit_code == 0, result.output
    return root / "generated"


def test_generation_follows_the_names(tmp_path, runner, helpers):
    root = helpers.project(
        tmp_path / "p", {"ops.yaml": SPECS}, {"cpu/silu.cc": SILU_KERNEL}
    )
    (root / "pyproject.toml").write_text(
        "[tool.infiniops-codegen]\nname = 'alpha'\ncmake-package = 'Alpha'\n"
    )
    gen = _generate(runner, helpers, root)
    ops_h = (gen / "ops.h").read_text()
    assert "namespace alpha {" in ops_h and "using namespace ::infini::ops;" in ops_h
    assert "namespace infini::ops {" not in ops_h
    assert 'ProfileScope profile_("alpha::twice")' in (gen / "ops.cpp").read_text()
    assert "PyInit_alpha()" in (gen / "bindings.cpp").read_text()
    assert (gen / "alpha.pyi").is_file() and not (gen / "infiniops.pyi").exists()
    cmake = (gen / "sources.cmake").read_text()
    for line in (
        'set(INFINI_OPS_NAME "alpha")',
        'set(INFINI_OPS_NAMESPACE "alpha")',
        'set(INFINI_OPS_PACKAGE "Alpha")',
    ):
        assert line in cmake.splitlines()
    manifest = json.loads((gen / "manifest.json").read_text())
    assert manifest["library"] == {
        "name": "alpha",
        "namespace": "alpha",
        "cmake_package": "Alpha",
    }


def test_this_repository_keeps_its_names():
    names = projects.load(REPO).names
    assert names == projects.LibraryNames()
    assert "namespace infini::ops {" in (REPO / "generated" / "ops.h").read_text()


# --- two libraries side by side ------------------------------------------------------


def _build(root: Path, prefix: Path) -> SimpleNamespace:
    request = builder.BuildRequest(
        project=projects.load(root),
        build_dir=root / "build",
        smoke=False,
        install=str(prefix),
    )
    lines = []
    result = builder.build(request, echo=lines.append)
    return SimpleNamespace(root=root, build=root / "build", result=result, lines=lines)


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> SimpleNamespace:
    """alpha (abs, add, silu with a CPU kernel, the composite twice) and beta
    (abs, add, mul), both installed into one prefix; built with a bridge cache
    of their own (the suite's builds bypass it otherwise), which beta's build
    takes alpha's bridge from."""
    base = tmp_path_factory.mktemp("two")
    prefix = base / "prefix"
    saved = {
        k: os.environ.get(k)
        for k in ("INFINIOPS_NO_BRIDGE_CACHE", "INFINIOPS_BRIDGE_CACHE_DIR")
    }
    os.environ.pop("INFINIOPS_NO_BRIDGE_CACHE", None)
    os.environ["INFINIOPS_BRIDGE_CACHE_DIR"] = str(base / "bridge-cache")
    try:
        return _build_two(base, prefix)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _build_two(base: Path, prefix: Path) -> SimpleNamespace:
    built = {}
    for name, package, specs, kernels in (
        ("alpha", "Alpha", SPECS, {"cpu/silu.cc": SILU_KERNEL}),
        ("beta", "Beta", "ops:\n  - abs.out\n  - add.out\n  - mul.out\n", {}),
    ):
        root = base / name
        root.mkdir()
        (root / "pyproject.toml").write_text(
            f"[tool.infiniops-codegen]\nname = '{name}'\ncmake-package = '{package}'\n"
        )
        (root / "op_specs").mkdir()
        (root / "op_specs" / "ops.yaml").write_text(specs)
        for rel, text in kernels.items():
            path = root / "cpp" / "kernels" / rel
            path.parent.mkdir(parents=True)
            path.write_text(text)
        built[name] = _build(root, prefix)
    return SimpleNamespace(base=base, prefix=prefix, **built)


TWO_MODULES = """\
import json, sys, torch
from infiniops_codegen.runtime import load
alpha, beta = load(sys.argv[1]), load(sys.argv[2])
x, y = torch.randn(6), torch.randn(6)
out = torch.empty(6)
alpha.add(x, y, out=out); assert torch.equal(out, x + y)
beta.mul(x, y, out=out); assert torch.equal(out, x * y)
alpha.silu(x, out=out, implementation="native")
torch.testing.assert_close(out, torch.nn.functional.silu(x))
with torch.profiler.profile() as prof:
    alpha.twice(x, out=out)
assert torch.equal(out, x * 2)
names = sorted({e.name for e in prof.events() if "twice" in e.name})
# alpha's switches and wrapper pool are alpha's alone
alpha.set_handle_reuse(False); alpha.set_direct_mode(False); beta.set_wrapper_pool(False)
alpha.add(x, y, out=out)
print(json.dumps({
    "modules": [alpha.__name__, beta.__name__, alpha is beta],
    "profiled": names,
    "switches": [alpha.handle_reuse(), beta.handle_reuse(), alpha.direct_mode(),
                 beta.direct_mode(), alpha.wrapper_pool(), beta.wrapper_pool()],
    "pools": [alpha._debug_wrapper_pool(False), beta._debug_wrapper_pool(False)],
}))
"""


@pytest.mark.own_build(
    "builds of its own: two libraries of other names, and a C++ program linking both"
)
def test_two_modules_load_side_by_side_with_their_own_state(two):
    proc = subprocess.run(
        [sys.executable, "-c", TWO_MODULES, str(two.alpha.build), str(two.beta.build)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["modules"] == ["alpha", "beta", False]
    assert got["profiled"] == ["alpha::twice"]
    assert got["switches"] == [False, True, False, True, True, False]
    alpha_pool, beta_pool = got["pools"]
    # handle reuse off: alpha's call took the from_blob path through its pool
    assert alpha_pool["fresh"] + alpha_pool["rebound"] == 3, alpha_pool
    assert beta_pool == {"rebound": 0, "fresh": 0, "kept": 0, "dropped": 0, "pooled": 0}


@pytest.mark.own_build(
    "builds of its own: two libraries of other names, and a C++ program linking both"
)
def test_the_bridge_is_one_for_both(two):
    """The bridge's objects name no library: beta links the ones alpha's
    build published."""
    assert any(
        ln.startswith("bridge cache: published ") for ln in two.alpha.lines
    ), two.alpha.lines
    hit = [ln for ln in two.beta.lines if ln.startswith("bridge cache: hit ")]
    assert hit, two.beta.lines


@pytest.mark.own_build(
    "builds of its own: two libraries of other names, and a C++ program linking both"
)
def test_build_directory_holds_the_names(two):
    build = two.alpha.build
    assert two.alpha.result.module.name.startswith("alpha.")
    assert (build / "alpha" / "__init__.py").is_file()
    assert sorted(p.name for p in build.glob("libalpha.so*"))[0] == "libalpha.so"
    assert not list(build.glob("libinfiniops*")) and not (build / "infiniops").exists()
    installed = two.prefix / "lib" / "cmake" / "Alpha"
    assert (installed / "AlphaConfig.cmake").is_file()
    assert (two.prefix / "include" / "alpha" / "ops.h").is_file()
    assert (two.prefix / "share" / "beta" / "manifest.json").is_file()


def _dynamic_symbols(path: Path) -> list[tuple[str, str]]:
    """(type letter, demangled name) of each symbol path defines for others."""
    proc = subprocess.run(
        ["nm", "-D", "--defined-only", "--demangle", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in proc.stdout.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            rows.append((parts[1], parts[2]))
    return rows


# What every shared object defines: where its data ends.
LINKER_MARKERS = {"__bss_start", "_edata", "_end", "_init", "_fini"}


@pytest.mark.own_build(
    "builds of its own: two libraries of other names, and a C++ program linking both"
)
@pytest.mark.parametrize("kind", ["library", "module"])
def test_the_two_export_no_symbol_in_common(two, kind):
    """Strong definitions (functions, data) in common would bind a caller of
    one to the other's; the core is local to each (a symbol of either that
    names infini::ops is one of its own namespace's functions). Weak and
    unique symbols (template instances of torch and the standard library,
    the same in every object) are the dynamic linker's to merge."""
    if kind == "library":
        files = [two.alpha.build / "libalpha.so", two.beta.build / "libbeta.so"]
    else:
        files = [two.alpha.result.module, two.beta.result.module]
    strong = []
    for path, ns in zip(files, ("alpha", "beta")):
        symbols = _dynamic_symbols(path)
        core = [
            n for t, n in symbols if "infini::ops" in n and not n.startswith(ns + "::")
        ]
        assert core == [], f"{path.name} exports core symbols: {core[:5]}"
        strong.append({n for t, n in symbols if t in "TDBR"} - LINKER_MARKERS)
    assert strong[0] & strong[1] == set()
    if kind == "module":
        assert strong == [{"PyInit_alpha"}, {"PyInit_beta"}]
    else:
        assert any(n.startswith("alpha::add(") for n in strong[0])
        assert any(n.startswith("beta::add(") for n in strong[1])


APP_CMAKE = """\
cmake_minimum_required(VERSION 3.22)
project(two LANGUAGES CXX)
find_package(Alpha CONFIG REQUIRED)
find_package(Beta CONFIG REQUIRED)
add_executable(two main.cpp)
target_link_libraries(two PRIVATE Alpha::alpha Beta::beta)
"""
APP_MAIN = """\
// Both libraries in one translation unit and one program.
#include <alpha/ops.h>
#include <alpha/torch_api.h>
#include <beta/ops.h>
#include <beta/torch_api.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> x{1, -2, 3}, y{4, 5, -6}, sum(3), prod(3), act(3);
  auto t = [](std::vector<float>& v) {
    return alpha::Tensor::contiguous(v.data(), alpha::Dims{3}, alpha::DataType::kFloat32,
                                     alpha::Device{});
  };
  alpha::Tensor tx = t(x), ty = t(y), tsum = t(sum), tprod = t(prod), tact = t(act);
  alpha::add(tx, ty, alpha::Scalar(1.0), tsum);
  beta::mul(tx, ty, tprod);
  alpha::silu(tx, tact, alpha::Implementation::kNative);
  try {
    beta::add(tx, ty, beta::Scalar(1.0), tsum, beta::Implementation::kNative);
    std::printf("beta::add ran natively\\n");
    return 1;
  } catch (const beta::ImplementationError& e) {
    std::printf("refused: %s\\n", e.what());
  }
  std::printf("%g %g %g | %g %g %g | %.4f\\n", sum[0], sum[1], sum[2], prod[0], prod[1],
              prod[2], act[0]);
  // The torch side: at::Tensors kept as handles, and each library's own
  // switches and pool.
  at::Tensor a = at::arange(3, at::kFloat), b = at::ones({3}), c = at::empty({3});
  alpha::Tensor out_c = alpha::torch_api::from_aten(c);
  alpha::add(alpha::torch_api::from_aten(a), beta::torch_api::from_aten(b), alpha::Scalar(2.0),
             out_c);
  alpha::torch_api::wrapper_pool() = false;
  alpha::torch_api::clear_wrapper_pool();
  beta::mul(tx, ty, tprod);  // from_blob tensors: through beta's pool
  std::printf("%g %g %g | %d %d | %d\\n", c[0].item<float>(), c[1].item<float>(),
              c[2].item<float>(), int(alpha::torch_api::wrapper_pool().load()),
              int(beta::torch_api::wrapper_pool().load()),
              int(beta::torch_api::wrapper_pool_stats().fresh +
                  beta::torch_api::wrapper_pool_stats().rebound));
  return 0;
}
"""


@pytest.mark.own_build(
    "builds of its own: two libraries of other names, and a C++ program linking both"
)
def test_one_cpp_program_links_both(two):
    app = two.base / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(APP_CMAKE)
    (app / "main.cpp").write_text(APP_MAIN)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for cmd in (
        [
            "cmake",
            "-S",
            app,
            "-B",
            app / "b",
            "-G",
            "Ninja",
            f"-DCMAKE_PREFIX_PATH={two.prefix}",
        ],
        ["cmake", "--build", app / "b"],
        [app / "b" / "two"],
    ):
        proc = subprocess.run(
            [str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=600
        )
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "refused: add(): Implementation::kNative was requested, but this op has no "
        "native kernel; use Implementation::kTorch or Implementation::kDefault"
    )
    assert lines[1] == "5 3 -3 | 4 -10 -18 | 0.7311"
    # a + 2 * b; alpha's pool off, beta's on: its two calls on from_blob
    # tensors made 3 wrappers, then re-bound them
    assert lines[2] == "2 3 4 | 0 1 | 6"
    needed = subprocess.run(
        ["readelf", "-d", str(app / "b" / "two")], capture_output=True, text=True
    ).stdout
    assert "libalpha.so" in needed and "libbeta.so" in needed
