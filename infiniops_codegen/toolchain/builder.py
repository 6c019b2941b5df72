"""Building the module: `build()` is what `infiniops-codegen build` and the
bench call.

    from infiniops_codegen import builder
    result = builder.build(builder.BuildRequest(build_dir=Path("build-O0"), opt_level="0"))
    result.module, result.ops, result.opt_level

The generated sources are refreshed first (only changed files are written,
so Ninja recompiles only what changed), CMake is configured with Ninja and
the module compiled; a compile error is reported with the shard and the ops
it holds, and the compiler's first error. `inspect()` says what an existing
build directory holds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..model import manifest as manifest_reader
from . import bridge_cache, cuda_toolkit, link_errors
from ..render import drift, pipeline, writer
from ..opspec import extensions
from ..model import kernel_sources
from ..base import sanitize
from ..base import project as projects
from ..base.locations import (
    CONFIGURE_STAMP,
    MANIFEST,
    PACKAGE_DIR,
    PORTS_RECORD,
    SUPPORT_DIR,
)
from ..base.locations import cmake_cache as _cmake_cache
from ..base.locations import find_module
from ..base.locations import shown as _rel
from ..base.platforms import load_platforms

OPT_LEVELS = ("0", "1", "2", "3", "s")
_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ")
_STAMP = CONFIGURE_STAMP  # this module's own: what was configured
# The environment CMake (and torch's CMake package) reads when it configures a
# build directory: compilers, their flags, search paths. CMake reads it into
# the cache only on a first configure and ignores a change later, so a change
# configures afresh (configure()).
CONFIGURE_ENV = (
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "CUDACXX",
    "CUDAHOSTCXX",
    "CUDAFLAGS",
    "CUDAARCHS",
    "VENDORCXX",
    "CMAKE_BUILD_TYPE",
    "CMAKE_TOOLCHAIN_FILE",
    "CMAKE_PREFIX_PATH",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "CMAKE_CUDA_COMPILER_LAUNCHER",
    "Torch_ROOT",
    "Python_ROOT",
    "CUDAToolkit_ROOT",
    "CUDA_HOME",
    "CUDA_PATH",
    "TORCH_CUDA_ARCH_LIST",
)
_CMAKE_ARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_.+-]*)(:[A-Z]+)?=(.*)$", re.S)


class BuildError(Exception):
    """A failed configure or compile; the message is for people."""


class OptionError(ValueError):
    """Options that cannot be built as given (a usage error); the message
    names the option and the fix."""


@dataclass(frozen=True)
class BuildRequest:
    """What `infiniops-codegen build` takes (its options, by the same names).
    build_dir and spec_dir default to the project's (project.current())."""

    build_dir: Path | None = None
    spec_dir: Path | None = None
    ops: str | None = None  # --ops: None (the default set), "all", names, @file
    opt_level: str = "3"
    jobs: int = os.cpu_count() or 1
    ccache: bool = True
    smoke: bool = True  # import the module in a fresh interpreter, call an op
    platforms: tuple[str, ...] = ("cpu",)
    compile_only: bool = False
    kernel_compilers: tuple[tuple[str, str], ...] = ()  # (platform, compiler)
    project: projects.Project | None = None  # None: project.current()
    # A distributed compiler front (distcc, sccache, ...) and its arguments,
    # before the C++ compiler (behind ccache when ccache is used).
    compiler_launcher: tuple[str, ...] = ()
    # Extension directories (opspec/extensions.py): their ops join the build.
    extensions: tuple[Path, ...] = ()
    # Overwrite generated files edited by hand (writer.HandEditedError
    # otherwise, before anything is configured or compiled).
    force: bool = False
    # After building: `cmake --install` into this prefix (headers, the C++
    # library, its CMake package; docs/cpp.md).
    install: Path | None = None
    # Sanitizers for every TU (sanitize.parse: "address", "undefined",
    # "thread"); the build then says how to run Python under them.
    sanitize: tuple[str, ...] = ()
    # --cmake-arg: (NAME or NAME:TYPE, VALUE), passed as -DNAME=VALUE.
    cmake_args: tuple[tuple[str, str], ...] = ()
    # --cache/--no-cache: the shared cache of the bridge's objects and the
    # precompiled header (bridge_cache.py); $INFINIOPS_NO_BRIDGE_CACHE set
    # bypasses it too.
    bridge_cache: bool = True


@dataclass(frozen=True)
class BuildResult:
    build_dir: Path
    generated_dir: Path  # where the sources were generated
    module: Path | None  # None with compile_only
    ops: tuple[str, ...]
    opt_level: str
    platforms: tuple[str, ...]
    files_changed: int  # generated files written or removed
    steps: int  # Ninja's build steps
    smoke: str  # what the smoke check printed ("" when it did not run)
    seconds: float
    installed: Path | None = None  # the prefix installed into
    # What the build is called (the project's table)
    names: projects.LibraryNames = projects.LibraryNames()
    sanitizer_env: sanitize.RunEnv | None = None  # with --sanitize
    # The bridge cache: "hit" (the entry linked), "published" (built here
    # and added), "built" (built here, not added: already there or not
    # addable), "locked" (built here, another build is adding it),
    # "bypassed", "off" (nothing to cache: no cached target in this build).
    bridge_cache: str = "bypassed"


@dataclass(frozen=True)
class Built:
    """What a build directory holds (`inspect`)."""

    build_dir: Path
    module: Path
    opt_level: str  # as configured; "?" when unknown
    generated_dir: Path | None  # the sources it was configured with
    manifest: manifest_reader.Manifest

    @property
    def ops(self) -> frozenset[str]:
        return frozenset(self.manifest.names)


@dataclass(frozen=True)
class BuildConfig:
    build_dir: Path
    generated_dir: Path
    kernel_root: Path | None = None  # the project's native kernels
    extension_kernels: tuple[tuple[str, Path], ...] = ()  # (extension, its kernels)
    opt_level: str = "3"
    jobs: int = os.cpu_count() or 1
    ccache: bool = True
    extra_cmake_args: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ("cpu",)  # names from data/platforms.yaml
    compile_only: bool = False  # objects only: no module, no smoke check
    kernel_compilers: tuple[tuple[str, str], ...] = ()  # (platform, compiler)
    compiler_launcher: tuple[str, ...] = ()  # BuildRequest.compiler_launcher
    sanitize: tuple[str, ...] = ()  # BuildRequest.sanitize
    user_cmake_args: tuple[tuple[str, str], ...] = ()  # BuildRequest.cmake_args
    bridge_entry: Path | None = None  # a bridge cache entry to link (bridge_cache)

    def uses_ccache(self) -> str | None:
        """ccache's path when the build uses it (wanted and installed)."""
        return shutil.which("ccache") if self.ccache else None

    def launcher(self) -> str:
        """CMAKE_CXX_COMPILER_LAUNCHER: ccache when wanted and installed (the
        distributed front then runs behind it, as its CCACHE_PREFIX, so hits
        stay local), else the front alone, else nothing."""
        ccache = self.uses_ccache()
        if not ccache:
            return ";".join(self.compiler_launcher)
        # Without this sloppiness ccache refuses TUs that use the PCH.
        sloppiness = "pch_defines,time_macros,include_file_mtime,include_file_ctime"
        env = ["env", f"CCACHE_SLOPPINESS={sloppiness}"]
        if self.compiler_launcher:
            env.append("CCACHE_PREFIX=" + " ".join(self.compiler_launcher))
        return ";".join([*env, ccache])

    def cmake_args(self) -> list[str]:
        args = [
            f"-DINFINI_OPS_TORCH_OPT_LEVEL={self.opt_level}",
            f"-DINFINI_OPS_GENERATED_DIR={self.generated_dir.resolve()}",
            "-DINFINI_OPS_KERNEL_ROOT="
            + (str(self.kernel_root.resolve()) if self.kernel_root else ""),
            "-DINFINI_OPS_EXTENSION_KERNEL_ROOTS="
            + ";".join(f"{n}={Path(d).resolve()}" for n, d in self.extension_kernels),
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        args.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={self.launcher()}")
        if self.compiler_launcher and self.uses_ccache():
            # ccache compiles a TU that uses a precompiled header with
            # -fpch-preprocess, whose output names the .gch, which a helper
            # machine does not have (the shards then fail to compile there).
            # Helpers parse the full headers anyway, so nothing is lost.
            args.append("-DINFINI_OPS_PCH=OFF")
        for p in load_platforms():
            args.append(f"-D{p.flag}={'ON' if p.name in self.platforms else 'OFF'}")
        # Always given, so that a build without such a port clears it.
        args.append(
            "-DINFINI_OPS_PORT_PREFIX_PATH="
            + ";".join(p for _, p in port_modules(tuple(self.platforms)) if p)
        )
        for name, compiler in self.kernel_compilers:
            args.append(f"-DINFINI_OPS_{name.upper()}_COMPILER={compiler}")
        args.append(f"-DINFINI_OPS_COMPILE_ONLY={'ON' if self.compile_only else 'OFF'}")
        # Always given, so that a build without --sanitize clears it.
        args.append(f"-DINFINI_OPS_SANITIZE={','.join(self.sanitize)}")
        # Always given, so that a build that does not use the entry clears it.
        args.append(f"-DINFINI_OPS_BRIDGE_ENTRY={self.bridge_entry or ''}")
        args += list(self.extra_cmake_args)
        own = {_cmake_name(a) for a in args}
        for name, value in self.user_cmake_args:
            bare = name.split(":")[0]
            if bare in own:
                raise OptionError(
                    f"--cmake-arg {name}={value}: the build sets {bare} itself; "
                    + _own_option(bare)
                )
            args.append(f"-D{name}={value}")
        return args


@functools.lru_cache(maxsize=8)
def port_modules(platforms: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(module, cmake_prefix_path) of the torch ports of the platforms
    (platforms.yaml torch.module), the path "" for a module without one:
    asked of the build's Python, where importing the simulated accelerator's
    module builds it (once). BuildError when a port module does not import."""
    modules = [p.torch_module for p in load_platforms() if p.name in platforms]
    found = []
    for module in dict.fromkeys(m for m in modules if m):
        code = (
            f"import {module} as m; "
            "print(getattr(m, 'cmake_prefix_path', '') or '', end='')"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True
        )
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise BuildError(f"the torch port module {module} does not import:\n{tail}")
        found.append((module, proc.stdout))
    return tuple(found)


def write_ports_record(path: Path, platforms: tuple[str, ...]) -> str:
    """The build's torch ports and where each one's package was, written to
    path (locations.PORTS_RECORD): runtime.load() imports them before the
    module and refuses a module linked against another build of a port.
    Returns their CMake prefix path (INFINI_OPS_PORT_PREFIX_PATH)."""
    found = port_modules(tuple(platforms))
    record = [{"module": m, "cmake_prefix_path": prefix} for m, prefix in found]
    Path(path).write_text(json.dumps(record) + "\n")
    return ";".join(prefix for _, prefix in found if prefix)


def _cmake_name(arg: str) -> str:
    """NAME of a -DNAME[:TYPE]=VALUE argument."""
    return re.split(r"[:=]", arg[2:], maxsplit=1)[0]


# The build option behind each CMake variable the tool sets.
_OWN_OPTION = {
    "INFINI_OPS_TORCH_OPT_LEVEL": "use --opt-level",
    "INFINI_OPS_SANITIZE": "use --sanitize",
    "INFINI_OPS_COMPILE_ONLY": "use --compile-only",
    "INFINI_OPS_GENERATED_DIR": "use --specs, --ops or --build-dir",
    "INFINI_OPS_KERNEL_ROOT": "the project's kernels directory (pyproject.toml)",
    "INFINI_OPS_EXTENSION_KERNEL_ROOTS": "use --extension",
    "CMAKE_CXX_COMPILER_LAUNCHER": "use --compiler-launcher or --no-ccache",
    "INFINI_OPS_PCH": "a distributed compiler behind ccache needs it OFF",
    "Python_EXECUTABLE": "run the tool with that interpreter",
    "INFINI_OPS_BRIDGE_ENTRY": "the bridge cache sets it (--no-cache: never)",
}


def _own_option(name: str) -> str:
    if name in _OWN_OPTION:
        return _OWN_OPTION[name]
    if name.startswith("WITH_"):
        return "use --platform"
    if name.startswith("INFINI_OPS_") and name.endswith("_COMPILER"):
        return "use --kernel-compiler"
    return "see infiniops-codegen build --help"


def parse_cmake_arg(text: str) -> tuple[str, str]:
    """One --cmake-arg NAME[:TYPE]=VALUE as (NAME[:TYPE], VALUE); OptionError
    naming the fix otherwise."""
    if text.startswith("-D"):
        raise OptionError(
            f"--cmake-arg {text}: give NAME=VALUE without -D "
            f"(--cmake-arg {text[2:]})"
        )
    m = _CMAKE_ARG.match(text)
    if not m:
        raise OptionError(
            f"--cmake-arg {text!r}: use NAME=VALUE, e.g. "
            "--cmake-arg CMAKE_CXX_FLAGS=-march=native"
        )
    return m.group(1) + (m.group(2) or ""), m.group(3)


def require_tools() -> None:
    missing = [tool for tool in ("cmake", "ninja") if shutil.which(tool) is None]
    if missing:
        raise BuildError(
            f"{' and '.join(missing)} not found on PATH; install them "
            "(e.g. 'apt-get install cmake ninja-build' or 'pip install cmake ninja')"
        )


def configure_env() -> dict[str, str]:
    """The variables of CONFIGURE_ENV that are set, with their values."""
    return {k: os.environ[k] for k in CONFIGURE_ENV if k in os.environ}


def configure(config: BuildConfig, echo) -> None:
    """Run CMake unless the build dir was configured with the same arguments
    and the same environment (CMake costs seconds; Ninja itself re-runs it
    when CMakeLists changes). A changed environment configures afresh: CMake
    reads CXXFLAGS, CXX, ... only into a new cache."""
    args = config.cmake_args()
    now = {"args": args, "env": configure_env()}
    stamp = config.build_dir / _STAMP
    cache = config.build_dir / "CMakeCache.txt"
    before = _read_stamp(stamp) if cache.is_file() else None
    if before is not None and {k: before.get(k) for k in now} == now:
        return
    config.build_dir.mkdir(parents=True, exist_ok=True)
    _forget_other_source(config.build_dir, echo)
    why = ""
    if cache.is_file() and (before is None or before.get("env") != now["env"]):
        why = "; " + _changed(before.get("env") if before else None, now["env"])
        cache.unlink()
        shutil.rmtree(config.build_dir / "CMakeFiles", ignore_errors=True)
    elif before is not None:
        # A variable set before and not now (a --cmake-arg dropped, ...) leaves
        # the cache too: the cache holds what this command line says.
        dropped = {_cmake_name(a) for a in before.get("args", []) if a.startswith("-D")}
        dropped -= {_cmake_name(a) for a in args}
        for name in sorted(dropped):
            args = args + ["-U", name]
    shown = ",".join(config.sanitize)
    echo(
        f"configuring {config.build_dir} (-O{config.opt_level}"
        + (f", sanitizers {shown}" if shown else "")
        + f"){why}"
    )
    cmd = ["cmake", "-S", str(SUPPORT_DIR), "-B", str(config.build_dir), "-G", "Ninja"]
    proc = subprocess.run(cmd + args, capture_output=True, text=True)
    if proc.returncode != 0:
        stamp.unlink(missing_ok=True)
        raise BuildError("CMake configure failed:\n" + _cmake_error(proc))
    stamp.write_text(json.dumps(now))
    write_ports_record(config.build_dir / PORTS_RECORD, config.platforms)
    # What the configure supplied for a CUDA build of torch (cuda_toolkit.py):
    # said, since it chose a toolkit and GPU architectures for the user.
    for line in proc.stdout.splitlines():
        if line.startswith("-- " + cuda_toolkit.STATUS):
            echo("  " + line[len("-- ") :])


def _read_stamp(stamp: Path) -> dict | None:
    """What the build dir was configured with; None when unknown (no stamp,
    or an older tool's, which recorded no environment)."""
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _changed(before: dict | None, now: dict) -> str:
    """Why a build dir is configured afresh, for people."""
    if before is None:
        return (
            "configuring afresh: the environment it was configured in is not recorded"
        )
    names = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    return (
        f"{', '.join(names)} changed: configuring afresh (CMake reads "
        + ("them" if len(names) > 1 else "it")
        + " only into a new cache)"
    )


def _forget_other_source(build_dir: Path, echo) -> None:
    """A build directory configured from another copy of the tool's CMake
    project (an older layout, or the tool installed elsewhere since): CMake
    refuses to reuse its cache, so start the configuration afresh. Objects
    stay; Ninja rebuilds what the new configuration changes."""
    home = _cmake_cache(build_dir).get("CMAKE_HOME_DIRECTORY")
    if home is None or Path(home).resolve() == SUPPORT_DIR.resolve():
        return
    echo(f"  {build_dir} was configured from {home}; configuring it afresh")
    (build_dir / "CMakeCache.txt").unlink(missing_ok=True)
    shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)


def _cmake_error(proc: subprocess.CompletedProcess) -> str:
    text = (proc.stderr or "") + (proc.stdout or "")
    lines = [l for l in text.splitlines() if l.strip()]
    start = next((i for i, l in enumerate(lines) if "CMake Error" in l), 0)
    return "\n".join(lines[start : start + 12])


def compile_all(
    config: BuildConfig, echo, shard_ops: dict[str, list[str]], targets=()
) -> int:
    """Run Ninja with progress lines (every target, or only `targets`);
    returns the number of steps run."""
    # -k 0: keep going, so one build reports every shard that fails.
    cmd = ["ninja", "-C", str(config.build_dir), f"-j{config.jobs}", "-k", "0"]
    cmd += list(targets)
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    steps = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        output.append(line)
        m = _PROGRESS.match(line)
        if m:
            steps = int(m.group(2))
            step = _short_step(line[m.end() :])
            if step is not None:
                echo(f"[{m.group(1)}/{m.group(2)}] {step}")
    if proc.wait() != 0:
        raise BuildError(_compile_error(output, shard_ops, config))
    return steps


def _short_step(text: str) -> str | None:
    """'Building CXX object CMakeFiles/x.dir/generated/a.cpp.o' -> 'compile
    a.cpp'; None for Ninja's own bookkeeping (the glob re-check)."""
    if text.startswith("Re-checking globbed directories"):
        return None
    m = re.match(r"Building (?:CXX|CUDA|VENDORCXX) object .*?\.dir/(.*)\.o$", text)
    if m:
        # Sources outside the tool's CMake project (the project's generated
        # sources and kernels) appear as their absolute path without its "/".
        name = m.group(1)
        if Path("/" + name).is_file():
            name = _rel(Path("/" + name))
        return f"compile {name}"
    m = re.match(
        r"Building CXX object CMakeFiles/(\w+)\.dir/cmake_pch\.hxx\.gch$", text
    )
    if m:
        return f"precompile the common header of {m.group(1)}"
    return text


def _compile_error(
    output: list[str],
    shard_ops: dict[str, list[str]],
    config: BuildConfig | None = None,
) -> str:
    """Every failed step, each with its ops and the compiler's first error
    (a link step: the symbols it did not find, link_errors.py)."""
    failed = [i for i, l in enumerate(output) if l.startswith("FAILED:")]
    if not failed:
        return "the build failed:\n" + "\n".join(output[-20:])
    parts = []
    for n, i in enumerate(failed):
        end = failed[n + 1] if n + 1 < len(failed) else len(output)
        block = output[i:end]
        linked = _link_error(block, config) if config is not None else None
        if linked is not None:
            parts.append(linked)
            continue
        where = _failed_target(output[i], shard_ops)
        first = next((k for k, l in enumerate(block) if ": error:" in l), None)
        detail = block[first : first + 6] if first is not None else block[1:8]
        if any(_OLD_KERNEL_RESULT.search(l) for l in block):
            detail.append(OLD_KERNEL_HINT)
        parts.append(where + ":\n" + "\n".join(detail))
    summary = f"{len(failed)} build step(s) failed"
    return summary + "\n" + "\n".join(parts)


# A kernel written for the return type kernels had before KernelResult: the
# compiler sees a second function differing only in its return type.
# (Quoted with ' or, in a UTF-8 locale, with ‘.)
_OLD_KERNEL_RESULT = re.compile(
    r"ambiguating new declaration of .bool infini::ops::native::"
)
OLD_KERNEL_HINT = (
    "hint: native kernels return KernelResult (core/decline.h), not bool: "
    'write `KernelResult op(...)`; `return true;`, `return decline("why");` '
    "and `return helper(...);` stay as they are (docs/adding-an-op.md)"
)


def _link_error(block: list[str], config: BuildConfig) -> str | None:
    """A failed link step's report, or None for another failed step."""
    target = block[0].removeprefix("FAILED:").split()
    name = Path(target[0]).name if target else "the link"
    kernel_dirs = [config.kernel_root] if config.kernel_root else []
    kernel_dirs += [Path(d) for _, d in config.extension_kernels]
    return link_errors.explain(name, block, config.generated_dir, kernel_dirs, _rel)


def _failed_target(line: str, shard_ops: dict[str, list[str]]) -> str:
    for shard, ops in shard_ops.items():
        if shard in line:
            return f"{shard} failed to compile (ops: {', '.join(ops)})"
    m = re.search(r"(\S+\.(?:cpp|cc|cu|maca|mu|mlu))\.o", line)
    return f"{m.group(1) if m else line} failed to compile"


def smoke_check(
    build_dir: Path, op_count: int, run_env: sanitize.RunEnv | None = None
) -> str:
    """Import the module in a fresh interpreter (under the sanitizers of
    run_env, when given) and call one op."""
    code = (
        "import sys, torch\n"
        "from infiniops_codegen.runtime import load\n"
        f"m = load({str(build_dir)!r})\n"
        f"assert len(m.implementations()) == {op_count}, len(m.implementations())\n"
        "if hasattr(m, 'add'):\n"
        "    x = torch.arange(6.0).reshape(2, 3); out = torch.empty(2, 3)\n"
        "    m.add(x, x.t().contiguous().t(), alpha=2, out=out)\n"
        "    torch.testing.assert_close(out, x + 2 * x)\n"
        "    print('add ok;', end=' ')\n"
        "print(len(m.implementations()), 'ops importable')\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(PACKAGE_DIR.parent), env.get("PYTHONPATH")])
    )
    if run_env is not None:
        env.update(run_env.env())
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise BuildError("smoke check failed:\n" + (proc.stderr or proc.stdout)[-2000:])
    return proc.stdout.strip()


def resolved(request: BuildRequest) -> BuildRequest:
    """request with its project, build_dir and spec_dir filled in."""
    project = request.project or projects.current()
    return replace(
        request,
        project=project,
        build_dir=Path(request.build_dir or project.build_dir),
        spec_dir=Path(request.spec_dir or project.specs),
    )


def generated_dir_for(request: BuildRequest) -> Path:
    """Where a build's sources are generated (project.Project.generated_dir:
    the committed generated/ only for the project's default set)."""
    request = resolved(request)
    default_set = (
        pipeline.parse_selection(request.ops)[0] == "default" and not request.extensions
    )
    return request.project.generated_dir(
        request.spec_dir, default_set, request.build_dir
    )


def build(request: BuildRequest, echo=print, verbose: bool = False) -> BuildResult:
    """Generate (writing only what changed), configure, compile, copy the
    manifest into the build directory and smoke-test the module.

    Raises SpecErrors (spec problems), resolve.SelectionError (an unknown
    --ops name), OSError (an unreadable --ops file, an unwritable directory),
    writer.ForeignFileError (a file without the @generated line in the way;
    its subclass writer.HandEditedError: a generated file edited by hand, unless
    request.force), OptionError (a --cmake-arg of a variable the build sets
    itself, before anything is written) and BuildError (configure, compile
    or smoke check failed)."""
    start = time.perf_counter()
    request = resolved(request)
    build_dir = request.build_dir
    exts = extensions.load_all(request.extensions)  # SpecErrors, located
    gen_dir = generated_dir_for(request)
    config = BuildConfig(
        build_dir=build_dir,
        generated_dir=gen_dir,
        kernel_root=request.project.kernels,
        extension_kernels=tuple((e.name, e.kernels) for e in exts),
        opt_level=request.opt_level,
        jobs=request.jobs,
        ccache=request.ccache,
        platforms=request.platforms,
        compile_only=request.compile_only,
        kernel_compilers=request.kernel_compilers,
        compiler_launcher=request.compiler_launcher,
        sanitize=request.sanitize,
        user_cmake_args=request.cmake_args,
    )
    config.cmake_args()  # OptionError before anything is written
    sources = generate_sources(request, echo, exts)
    gen, gen_dir, changed = sources.generation, sources.generated_dir, sources.changed
    config = replace(config, generated_dir=gen_dir)
    names = tuple(op.name for op in gen.opset.ops)
    shard_ops = {s.file: [op.name for op in s.ops] for s in gen.opset.shards}
    if verbose:
        echo(
            f"  build dir {_rel(build_dir)}/, wrappers -O{request.opt_level}, "
            f"{request.jobs} jobs, compiler launcher '{config.launcher() or 'none'}'"
        )
        for shard, ops in shard_ops.items():
            echo(f"  {shard}: {', '.join(ops)}")
    require_tools()
    use_cache = request.bridge_cache and not bridge_cache.bypassed_by_env()
    config, cached = _configure_with_cache(config, use_cache, echo)
    run_env = None
    if request.sanitize:
        cxx = _cmake_cache(build_dir).get("CMAKE_CXX_COMPILER") or "c++"
        run_env = sanitize.run_env(request.sanitize, cxx)
    sanitize.write(build_dir, run_env)
    steps = compile_all(config, echo, shard_ops)
    cache_state = _after_build(config, cached, use_cache, echo)
    # The harness and tools read what this build holds from here.
    shutil.copyfile(gen_dir / MANIFEST, build_dir / MANIFEST)
    _record_rebuild(build_dir, request)
    module = None if request.compile_only else find_module(build_dir)
    smoke = ""
    if request.smoke and not request.compile_only:
        if run_env is not None and run_env.missing:
            smoke = (
                f"skipped: {cxx} names no {', '.join(run_env.missing)} to preload, "
                "and the module loads only with the sanitizers' runtimes preloaded"
            )
        else:
            smoke = smoke_check(build_dir, len(names), run_env)
    if request.install is not None:
        install(build_dir, Path(request.install), echo)
    return BuildResult(
        build_dir=build_dir,
        generated_dir=gen_dir,
        module=module,
        ops=names,
        opt_level=request.opt_level,
        platforms=request.platforms,
        files_changed=changed,
        steps=steps,
        smoke=smoke,
        seconds=time.perf_counter() - start,
        installed=Path(request.install) if request.install is not None else None,
        names=request.project.names,
        sanitizer_env=run_env,
        bridge_cache=cache_state,
    )


@dataclass(frozen=True)
class Sources:
    """What generate_sources() wrote, and where."""

    generation: pipeline.Generation
    generated_dir: Path
    changed: int  # generated files written or removed


def generate_sources(request: BuildRequest, echo=print, exts=None) -> Sources:
    """Generate a build's sources, writing only what changed: the project's
    generated/ for its default set, else the build directory's (unless the
    committed sources follow another torch's schemas: then the build
    directory's too). What `build` and the wheel's configure step
    (wheel.py) do first. Raises as build() does, before configuring."""
    request = resolved(request)
    if exts is None:
        exts = extensions.load_all(request.extensions)  # SpecErrors, located
    gen_dir = generated_dir_for(request)
    try:
        gen = pipeline.generate(
            Path(request.spec_dir),
            request.ops,
            exts,
            library=request.project.names,
            reference=request.project.generated,
        )
    except OSError as e:
        raise OSError(f"cannot read an --ops file: {e}") from None
    if gen_dir == request.project.generated:
        # The committed sources follow the schemas of the release they were
        # generated with; where this torch's differ, they are not rewritten
        # but this build gets its own (docs/torch-releases.md).
        drifted = drift.between(gen_dir, gen.files)
        if drifted:
            gen_dir = Path(request.build_dir) / "generated"
            echo(_drift_note(drifted, gen.opset.torch_version, request, gen_dir))
    try:
        written = writer.write(gen.files, gen_dir, force=request.force)
    except OSError as e:
        raise OSError(f"cannot write {gen_dir}: {e}") from None
    changed = len(written.stale) + len(written.missing) + len(written.extra)
    echo(
        f"generate: {len(gen.opset.ops)} ops, {changed} files changed in {_rel(gen_dir)}/"
    )
    # After writing (a hand-edited generated file is refused first, as by
    # `generate`), before CMake.
    require_kernel_sources(gen.opset, request, exts)
    return Sources(gen, gen_dir, changed)


def require_kernel_sources(opset, request: BuildRequest, exts) -> None:
    """BuildError naming each native kernel of the build's platforms whose
    source is missing (kernel_sources.unbuildable), before CMake runs: CMake
    would say less, and Ninja, re-running it in a directory that built
    before, only "rebuilding 'build.ninja': cannot make progress"."""
    roots = {"": request.project.kernels}
    roots.update({e.name: e.kernels for e in exts})
    lines = kernel_sources.unbuildable(
        opset,
        request.platforms,
        roots,
        lambda p: Path(request.project.rel(p)).as_posix(),
    )
    if lines:
        raise BuildError("\n".join(lines))


# --- The bridge cache (bridge_cache.py, docs/building.md) -------------------------


@dataclass(frozen=True)
class _CacheUse:
    key: str | None  # None: nothing to cache in this build directory
    doc: dict | None
    files: dict[str, Path]
    entry: Path | None  # the entry linked, on a hit
    # When the directory was configured, and the key its own objects were
    # compiled under before (state "built"): its objects are publishable
    # only when compiled under this key.
    since: float = 0.0
    built_before: str | None = None


def _configure_with_cache(
    config: BuildConfig, use_cache: bool, echo
) -> tuple[BuildConfig, _CacheUse | None]:
    """Configure; with the cache, compute the key of the bridge's compile
    commands as configured and configure again where the entry to link
    changes (a hit, or an entry that no longer matches: never a stale one)."""
    root = bridge_cache.cache_root()
    if not use_cache:
        configure(replace(config, bridge_entry=None), echo)
        echo("bridge cache: bypassed (--no-cache or $INFINIOPS_NO_BRIDGE_CACHE)")
        return replace(config, bridge_entry=None), None
    before = _bridge_state(config.build_dir)
    previous = before.get("entry")
    if previous is not None:
        # Still there and whole (lookup checks the sizes)? Else build in-tree.
        found = bridge_cache.lookup(Path(previous).parent, Path(previous).name)
        previous = str(found) if found is not None else None
    if previous is None and before.get("built") is None:
        # A new directory: the entry that builds configured alike last
        # linked, if any, saves configuring twice. Only a guess: the key
        # below decides, and a wrong guess is configured away.
        previous = _hinted_entry(root, config)
    config = replace(config, bridge_entry=Path(previous) if previous else None)
    configure(config, echo)
    # A change of the tool's CMake project or of what it includes makes
    # Ninja configure again before anything else: do it now, so that the
    # commands the key is computed from are those the build will run.
    _regenerate(config.build_dir)
    cached = bridge_cache.of_build(config.build_dir, config.generated_dir)
    if cached is None:
        if previous:
            config = replace(config, bridge_entry=None)
            configure(config, echo)
        return config, _CacheUse(None, None, {}, None)
    doc = bridge_cache.document(cached.inputs)
    key = bridge_cache.key(doc)
    entry = bridge_cache.lookup(root, key)
    if entry is not None and previous is None and before.get("built") == key:
        # This directory built and published this very entry: its own
        # objects are the same; switching would only relink.
        entry = None
    if (str(entry) if entry else None) != previous:
        config = replace(config, bridge_entry=entry)
        configure(config, echo)
        _regenerate(config.build_dir)
    _set_bridge_state(
        config.build_dir, {**before, "entry": str(entry) if entry else None}
    )
    if entry is not None:
        _set_hint(root, config, key)
    if entry is not None:
        taken = "the bridge's objects"
        if (entry / "cmake_pch.hxx.gch").is_file() and config.opt_level == "3":
            taken += " and the precompiled header"
        echo(f"bridge cache: hit {key[:12]} in {_rel(root)}: {taken} taken from it")
    elif before.get("built") == key:
        echo(f"bridge cache: built here, up to date ({key[:12]}, {_rel(root)})")
    else:
        echo(f"bridge cache: miss {key[:12]} in {_rel(root)}: compiling the bridge")
    return config, _CacheUse(
        key, doc, cached.files, entry, time.time(), before.get("built")
    )


def _after_build(
    config: BuildConfig, cached: _CacheUse | None, use_cache: bool, echo
) -> str:
    """After a successful build: publish the bridge's objects on a miss;
    returns the cache's state for BuildResult.bridge_cache."""
    if not use_cache or cached is None:
        _set_bridge_state(config.build_dir, {})
        return "bypassed"
    if cached.key is None:
        _set_bridge_state(config.build_dir, {})
        return "off"
    if cached.entry is not None:
        return "hit"
    # Ninja recompiles what a changed command or source changes, not what
    # another compiler binary or torch record would: objects older than this
    # build are this key's only if they were compiled under it before.
    objects = [p for n, p in cached.files.items() if n.endswith((".o", ".gch"))]
    fresh = cached.built_before == cached.key or all(
        p.is_file() and p.stat().st_mtime >= cached.since - 1 for p in objects
    )
    if not fresh:
        _set_bridge_state(config.build_dir, {"entry": None})
        echo(
            "bridge cache: not published: this directory's bridge objects are "
            "older than their key (compiled by an earlier tool, compiler or "
            "torch?); a new build directory fills the cache"
        )
        return "built"
    # The directory's own objects are now those of this key.
    _set_bridge_state(config.build_dir, {"entry": None, "built": cached.key})
    root = bridge_cache.cache_root()
    if bridge_cache.lookup(root, cached.key) is not None:
        return "built"  # already there (published by this or another build)
    if not all(p.is_file() for p in cached.files.values()):
        return "built"
    # What was compiled is what was keyed (nothing changed the commands or
    # the sources while Ninja ran, nor did Ninja configure again).
    again = bridge_cache.of_build(config.build_dir, config.generated_dir)
    if again is None or bridge_cache.key(bridge_cache.document(again.inputs)) != (
        cached.key
    ):
        echo("bridge cache: not published (its inputs changed during the build)")
        _set_bridge_state(config.build_dir, {"entry": None})
        return "built"
    try:
        entry = bridge_cache.publish(root, cached.key, cached.doc, cached.files)
    except OSError as e:  # a full disk, an unwritable cache: not the build's fault
        echo(f"bridge cache: not published ({e})")
        return "built"
    if entry is None:
        echo("bridge cache: another build is publishing the same entry")
        return "locked"
    _set_hint(root, config, cached.key)
    removed = bridge_cache.trim(root, spare=entry)
    echo(
        f"bridge cache: published {cached.key[:12]} to {_rel(entry)}"
        + (f" (removed {len(removed)} older)" if removed else "")
    )
    return "published"


# Configure arguments that differ per project and do not reach the bridge's
# commands (or are the cache's own).
_PER_PROJECT = {
    "INFINI_OPS_GENERATED_DIR",
    "INFINI_OPS_KERNEL_ROOT",
    "INFINI_OPS_EXTENSION_KERNEL_ROOTS",
    "INFINI_OPS_BRIDGE_ENTRY",
}


def _hint_name(config: BuildConfig) -> str:
    """A name for how a directory is configured, projects aside."""
    args = [a for a in config.cmake_args() if _cmake_name(a) not in _PER_PROJECT]
    text = json.dumps([str(SUPPORT_DIR), args, configure_env()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _hinted_entry(root: Path, config: BuildConfig) -> str | None:
    try:
        key = (root / "hints" / _hint_name(config)).read_text().strip()
    except (OSError, ValueError):
        return None
    entry = bridge_cache.lookup(root, key) if re.fullmatch(r"[0-9a-f]+", key) else None
    return str(entry) if entry is not None else None


def _set_hint(root: Path, config: BuildConfig, key: str) -> None:
    hints = root / "hints"
    name = _hint_name(config)
    try:
        hints.mkdir(parents=True, exist_ok=True)
        tmp = hints / f"tmp-{os.getpid()}-{name}"
        tmp.write_text(key)
        os.replace(tmp, hints / name)
    except OSError:
        pass  # only a shortcut


_BRIDGE_STATE = "infiniops-bridge-cache.json"


def _bridge_state(build_dir: Path) -> dict:
    try:
        data = json.loads((build_dir / "CMakeFiles" / _BRIDGE_STATE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _set_bridge_state(build_dir: Path, state: dict) -> None:
    path = build_dir / "CMakeFiles" / _BRIDGE_STATE
    if path.parent.is_dir():
        path.write_text(json.dumps(state))


def _regenerate(build_dir: Path) -> None:
    """Let Ninja re-run CMake where its build file is out of date."""
    subprocess.run(
        ["ninja", "-C", str(build_dir), "build.ninja"],
        capture_output=True,
        text=True,
    )


def _drift_note(found, torch: str, request: BuildRequest, gen_dir: Path) -> str:
    names = drift.overloads(found)
    which = f" ({', '.join(names)})" if len(names) <= 3 else ""
    committed = request.project.rel(request.project.generated)
    return (
        f"generate: torch {torch}'s ATen schemas differ from those {committed}/ "
        f"was generated with, for {drift.counted(found)}{which} ('infiniops-codegen "
        f"generate --check' says what changed): generating into {_rel(gen_dir)}/ "
        f"and leaving {committed}/ as it is"
    )


def rebuild_options(request: BuildRequest) -> list[str]:
    """The `build` options that make this build again (resolved request),
    those that change what is built; for the loader's message when the
    torch changed under the build (runtime/loader.py)."""
    project = request.project
    options = []
    if Path(request.spec_dir).resolve() != project.specs.resolve():
        options += ["--specs", str(Path(request.spec_dir).resolve())]
    if request.ops is not None:
        options += ["--ops", request.ops]
    if request.opt_level != "3":
        options += ["--opt-level", request.opt_level]
    if request.platforms != ("cpu",):
        options += ["--platform", ",".join(request.platforms)]
    for name, compiler in request.kernel_compilers:
        options += ["--kernel-compiler", f"{name}={compiler}"]
    for directory in request.extensions:
        options += ["--extension", str(Path(directory).resolve())]
    if request.sanitize:
        options += ["--sanitize", ",".join(request.sanitize)]
    for name, value in request.cmake_args:
        options += ["--cmake-arg", f"{name}={value}"]
    return options


def _record_rebuild(build_dir: Path, request: BuildRequest) -> None:
    """Add to the configure stamp how to build this directory again: its
    project and the options (rebuild_options)."""
    stamp = build_dir / _STAMP
    data = _read_stamp(stamp) or {}
    data["rebuild"] = {
        "project": str(request.project.root),
        "options": rebuild_options(request),
    }
    stamp.write_text(json.dumps(data))


def install(build_dir: Path, prefix: Path, echo) -> None:
    """`cmake --install` a built directory into prefix: the C++ library, its
    headers under include/<name>/ and its CMake package (LibraryNames)."""
    echo(f"installing into {prefix}")
    proc = subprocess.run(
        ["cmake", "--install", str(build_dir), "--prefix", str(prefix.resolve())],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise BuildError(
            f"cmake --install into {prefix} failed:\n" + _cmake_error(proc)
        )


def inspect(build_dir: Path) -> Built | None:
    """What a build directory holds: None without a module or a manifest."""
    build_dir = Path(build_dir)
    module = find_module(build_dir)
    if module is None or not (build_dir / MANIFEST).is_file():
        return None
    cache = _cmake_cache(build_dir)
    generated = cache.get("INFINI_OPS_GENERATED_DIR")
    return Built(
        build_dir=build_dir,
        module=module,
        opt_level=cache.get("INFINI_OPS_TORCH_OPT_LEVEL", "?"),
        generated_dir=Path(generated) if generated else None,
        manifest=manifest_reader.of_build(build_dir),
    )


def built_platforms(build_dir: Path) -> tuple[str, ...] | None:
    """The platforms a build directory was configured with (its WITH_<P>
    flags), in table order; None when it holds no CMake cache."""
    cache = _cmake_cache(build_dir)
    if not cache:
        return None
    on = ("ON", "YES", "TRUE", "Y", "1")
    return tuple(
        p.name for p in load_platforms() if cache.get(p.flag, "").upper() in on
    )
