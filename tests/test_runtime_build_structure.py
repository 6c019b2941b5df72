"""Build structure, read from real builds and configures.

- The default build (build/, made by the `ops` fixture): effective -O levels
  from compile_commands.json, and the headers each generated TU really
  included, from Ninja's dependency log.
- Configure-only runs (seconds, nothing compiled) for every other level, and
  the configure-time and CLI errors for invalid levels.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infiniops_codegen.base.locations import SUPPORT_DIR
from runtime_conftest_helpers import REPO, build_dir, opt_flags, subprocess_env

GENERATED = REPO / "generated"
UMBRELLA_HEADERS = ("torch/torch.h", "torch/extension.h", "ATen/ATen.h")


def _is_unity(path: Path) -> bool:
    """A CMake unity TU (UNITY_GROUP), which includes the real sources."""
    return path.parent.name == "Unity" and path.suffix == ".cxx"


def _unity_sources(path: Path) -> list[Path]:
    """The sources a CMake unity TU includes."""
    return [
        Path(m).resolve()
        for m in re.findall(r'^#include "(.*)"$', path.read_text(), re.M)
    ]


def _kind(file: str, generated: Path = GENERATED) -> str:
    path = Path(file).resolve()
    if path.parent == (SUPPORT_DIR / "cpp" / "torch").resolve():
        return "bridge"
    # the bridge's Python-facing files compile as one unity TU
    if _is_unity(path):
        if all(
            s.parent == (SUPPORT_DIR / "cpp" / "torch").resolve()
            for s in _unity_sources(path)
        ):
            return "bridge"
    if path.parent == (generated / "torch_fallback").resolve():
        return "wrapper"
    if path == (generated / "ops.cpp").resolve():
        return "dispatch"
    if path == (generated / "bindings.cpp").resolve():
        return "bindings"
    return "other"


def _generated_of(directory: Path) -> Path:
    """The sources a build directory was configured with: generated/, or its
    own generated/ where the installed torch's schemas are not generated/'s
    (docs/torch-releases.md)."""
    cache = (directory / "CMakeCache.txt").read_text()
    return Path(re.search(r"^INFINI_OPS_GENERATED_DIR:\w+=(.*)$", cache, re.M)[1])


def _commands(directory: Path) -> dict[str, list[dict]]:
    entries = json.loads((directory / "compile_commands.json").read_text())
    generated = _generated_of(directory)
    by_kind: dict[str, list[dict]] = {}
    for e in entries:
        by_kind.setdefault(_kind(e["file"], generated), []).append(e)
    return by_kind


def _last_opt(entry: dict) -> str:
    flags = opt_flags(entry["command"])
    assert flags, f"no -O flag for {entry['file']}"
    return flags[-1]


def _expected_sources(generated: Path = GENERATED) -> dict[str, set[Path]]:
    return {
        "bridge": set((SUPPORT_DIR / "cpp" / "torch").glob("*.cpp")),
        "wrapper": set((generated / "torch_fallback").glob("*.cpp")),
        "dispatch": {generated / "ops.cpp"},
        "bindings": {generated / "bindings.cpp"},
    }


def _check_levels(by_kind, level: str, exact_sources: bool = True):
    """exact_sources: the TUs are exactly the current tree's (a fresh
    configure); otherwise (an older build) each kind just has its TUs."""
    expected = _expected_sources()
    for kind, sources in expected.items():
        got = set()
        for e in by_kind.get(kind, []):
            path = Path(e["file"]).resolve()
            got |= set(_unity_sources(path)) if _is_unity(path) else {path}
        want = {p.resolve() for p in sources}
        if exact_sources:
            assert got == want, kind
        else:
            assert got, kind
    for e in by_kind["bridge"]:
        assert _last_opt(e) == "-O3", e["file"]
    for kind in ("wrapper", "dispatch", "bindings"):
        for e in by_kind[kind]:
            assert _last_opt(e) == f"-O{level}", e["file"]


# --- The default build -------------------------------------------------------------


@pytest.fixture(scope="module")
def default_build(ops) -> Path:
    """The build directory the `ops` fixture loaded (built at the default -O3)."""
    directory = build_dir()
    assert (directory / "compile_commands.json").is_file()
    return directory


def test_default_build_levels(default_build):
    # build/ may predate the newest sources; a fresh configure checks those.
    _check_levels(_commands(default_build), "3", exact_sources=False)


def test_wrapper_sources_are_lean(default_build):
    sources = _generated_of(default_build)
    wrappers = sorted((sources / "torch_fallback").glob("*.cpp"))
    assert wrappers
    generated = wrappers + sorted(sources.glob("*.cpp")) + sorted(sources.glob("*.h"))
    for path in generated:
        text = path.read_text()
        for header in UMBRELLA_HEADERS:
            assert f"<{header}>" not in text and f'"{header}"' not in text, (
                path.name,
                header,
            )
    commands = {
        Path(e["file"]).resolve(): e["command"]
        for e in _commands(default_build)["wrapper"]
    }
    for path in wrappers:
        text = path.read_text()
        on_command_line = (
            "-DTORCH_ASSERT_ONLY_METHOD_OPERATORS" in commands[path.resolve()]
        )
        define = text.find("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS")
        first_include = text.find("#include")
        assert on_command_line or 0 <= define < first_include, (
            f"{path.name} must define TORCH_ASSERT_ONLY_METHOD_OPERATORS before "
            "its first include"
        )
        assert "#include <ATen/ops/" in text, path.name


def _ninja_deps(directory: Path) -> dict[str, list[str]]:
    ninja = shutil.which("ninja")
    assert ninja, "ninja not on PATH"
    proc = subprocess.run(
        [ninja, "-C", str(directory), "-t", "deps"],
        capture_output=True,
        text=True,
        check=True,
    )
    deps: dict[str, list[str]] = {}
    current = None
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" ") and "#deps" in line:
            current = line.split(":", 1)[0]
            deps[current] = []
        elif current is not None:
            deps[current].append(line.strip())
    return deps


def test_generated_tus_really_include_no_umbrella_header(default_build):
    """Transitively, from the compiler's own dependency output (Ninja's log)."""
    deps = _ninja_deps(default_build)
    generated = _generated_of(default_build)
    checked = {"wrapper": 0, "dispatch": 0, "bindings": 0}
    for obj, headers in deps.items():
        source = next((h for h in headers[:1] if h.endswith((".cpp", ".cc"))), None)
        kind = _kind(source, generated) if source else "other"
        if kind not in checked:
            continue
        checked[kind] += 1
        for header in headers:
            for banned in UMBRELLA_HEADERS + ("ATen/Functions.h",):
                assert not header.endswith("/" + banned), (obj, header)
        if kind in ("dispatch", "bindings"):
            # Dispatch and bindings compile without any ATen header at all.
            assert not [h for h in headers if "/ATen/" in h or "/c10/" in h], obj
    assert checked["wrapper"] == len(_commands(default_build)["wrapper"])
    assert checked["dispatch"] == checked["bindings"] == 1


def _includes(path: Path) -> list[str]:
    return re.findall(r"^#include [<\"](.+?)[>\"]", path.read_text(), re.M)


def test_shard_prelude_holds_what_every_per_op_header_includes():
    """The precompiled prelude must hold every header a shard's per-operator
    ATen headers include besides their own declarations (<op>_ops.h), or
    each shard parses them again (torch may change the list). The kernel
    entry points' headers (<op>_cpu_dispatch.h, ...) are checked too."""
    import torch

    torch_include = Path(torch.__file__).parent / "include"
    prelude = set(_includes(SUPPORT_DIR / "cpp" / "torch" / "shard_prelude.h"))
    op_headers = set()
    for shard in (GENERATED / "torch_fallback").glob("shard_*.cpp"):
        includes = _includes(shard)
        assert includes[0] == "torch/shard_prelude.h", shard.name
        op_headers |= {h for h in includes[1:] if not h.endswith("_cpu_dispatch.h")}
    assert len(op_headers) > 100
    for header in sorted(op_headers):
        own = header.removesuffix(".h") + "_ops.h"
        missing = set(_includes(torch_include / header)) - prelude - {own}
        assert not missing, (header, sorted(missing))


def test_aten_conversions_share_the_precompiled_header(default_build, configured):
    """At -O3 aten_convert.cpp takes the shards' precompiled header; at other
    levels (GCC would reject it: other optimisation macros) it parses."""

    def pch_flag(directory: Path, source: str = "aten_convert.cpp") -> bool:
        (entry,) = [
            e
            for e in json.loads((directory / "compile_commands.json").read_text())
            if e["file"].endswith(source)
        ]
        return "cmake_pch.hxx" in entry["command"]

    assert pch_flag(default_build)
    assert pch_flag(default_build, "shard_000.cpp")
    # The stream guards include no ATen header: they skip it.
    assert not pch_flag(default_build, "stream_guards.cpp")
    proc, directory = configured["0"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not pch_flag(directory)
    assert pch_flag(directory, "shard_000.cpp")


# --- Configure-only runs -------------------------------------------------------------


def _configure(directory: Path, level: str) -> subprocess.CompletedProcess:
    cmd = [
        "cmake",
        "-S",
        str(SUPPORT_DIR),
        "-B",
        str(directory),
        "-G",
        "Ninja",
        f"-DINFINI_OPS_GENERATED_DIR={REPO / 'generated'}",
        f"-DINFINI_OPS_KERNEL_ROOT={REPO / 'cpp' / 'kernels'}",
        f"-DINFINI_OPS_TORCH_OPT_LEVEL={level}",
        f"-DPython_EXECUTABLE={sys.executable}",
        "-DCMAKE_CXX_COMPILER_LAUNCHER=",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def configured(tmp_path_factory):
    """level -> (CompletedProcess, build dir), configured in parallel."""
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.fail("cmake and ninja are required (see the README's install step)")
    root = tmp_path_factory.mktemp("configure")
    levels = ["0", "1", "2", "s", "4", "fast"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = pool.map(lambda lv: _configure(root / f"O{lv}", lv), levels)
        return {lv: (r, root / f"O{lv}") for lv, r in zip(levels, results)}


@pytest.mark.parametrize("level", ["0", "1", "2", "s"])
def test_configure_levels(configured, level):
    proc, directory = configured[level]
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_levels(_commands(directory), level)


@pytest.mark.parametrize("level", ["4", "fast"])
def test_configure_rejects_invalid_level(configured, level):
    proc, directory = configured[level]
    assert proc.returncode != 0
    text = proc.stderr + proc.stdout
    assert "INFINI_OPS_TORCH_OPT_LEVEL" in text
    assert level in text
    for valid in ("0", "1", "2", "3", "s"):
        assert valid in text.split("INFINI_OPS_TORCH_OPT_LEVEL", 1)[1]
    assert not (directory / "compile_commands.json").exists()


def test_builder_configure_passes_the_level(tmp_path):
    """`infiniops-codegen build`'s configure step (no compile)."""
    from infiniops_codegen.toolchain import builder

    config = builder.BuildConfig(
        build_dir=tmp_path / "b",
        generated_dir=GENERATED,
        kernel_root=REPO / "cpp" / "kernels",
        opt_level="s",
        ccache=False,
    )
    lines: list[str] = []
    builder.configure(config, lines.append)
    _check_levels(_commands(tmp_path / "b"), "s")


@pytest.mark.parametrize("level", ["4", "fast", "O3"])
def test_cli_rejects_invalid_opt_level(tmp_path, level):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infiniops_codegen.cli",
            "build",
            "--opt-level",
            level,
            "--build-dir",
            str(tmp_path / "never"),
        ],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--opt-level" in proc.stderr
    assert "Usage" in proc.stderr
    assert not (tmp_path / "never").exists()
