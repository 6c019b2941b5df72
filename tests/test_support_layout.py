"""The layout of the hand-written C++ support (infiniops_codegen/support/cpp),
read from its `#include` lines alone: fast, nothing built.

- the include graph of its files has no cycle;
- no file calls back into a file that calls it: a .h and the .cpp of the
  same name (in one folder) are one unit, and the include graph between
  units has no cycle either (torch/call.cpp including torch/torch_function.h
  while torch/torch_function.cpp includes torch/call.h is one);
- each folder keeps the rules its README.md states (which folders it may
  include, torch-free, Python-free, ...);
- every folder has a README.md;
- what support/CMakeLists.txt installs for C++ callers holds every support
  header an installed header includes, and each has an include guard.

Each check is a function of plain data; the `*_can_fail` tests run it on a
small graph made to break it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parent.parent
SUPPORT_CPP = REPO / "infiniops_codegen" / "support" / "cpp"
GENERATED = REPO / "generated"
CMAKE_LISTS = REPO / "infiniops_codegen" / "support" / "CMakeLists.txt"
SUFFIXES = (".h", ".cpp", ".cc", ".cuh")

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


# --- Reading the sources ------------------------------------------------------------


def includes_of(text: str) -> tuple[list[str], list[str]]:
    """(quoted, angled) include names of a file's text, in order."""
    quoted, angled = [], []
    for kind, name in _INCLUDE.findall(text):
        (quoted if kind == '"' else angled).append(name)
    return quoted, angled


class Sources:
    """The support's files (paths relative to support/cpp, as its quoted
    includes spell them) with what each includes: `local` the support's own
    files, `generated` quoted names found elsewhere (the generated headers:
    dtype_table.h, torch_tables.h, ...), `system` the angled ones."""

    def __init__(self, files: dict[str, str]):
        self.files = sorted(files)
        self.local: dict[str, list[str]] = {}
        self.generated: dict[str, list[str]] = {}
        self.system: dict[str, list[str]] = {}
        for path, text in files.items():
            quoted, angled = includes_of(text)
            self.local[path] = [q for q in quoted if q in files]
            self.generated[path] = [q for q in quoted if q not in files]
            self.system[path] = angled

    def closure(self, start: str) -> list[str]:
        """start and every support file it includes, directly or not."""
        seen, todo = [], [start]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.append(path)
            todo.extend(self.local.get(path, []))
        return seen


# --- The checks ----------------------------------------------------------------------


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of graph (node -> successors) as [a, b, ..., a], or None."""
    colour: dict[str, int] = {}  # absent: unseen; 1: on the path; 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = 1
        path.append(node)
        for succ in graph.get(node, []):
            if colour.get(succ) == 1:
                return path[path.index(succ) :] + [succ]
            if succ not in colour:
                found = visit(succ)
                if found:
                    return found
        path.pop()
        colour[node] = 2
        return None

    for node in sorted(graph):
        if node not in colour:
            found = visit(node)
            if found:
                return found
    return None


def all_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One cycle of each group of nodes that reach each other (each strongly
    connected component with a cycle), so that a report names them all."""
    reach: dict[str, set[str]] = {}

    def reachable(node: str) -> set[str]:
        if node not in reach:
            seen, todo = set(), [node]
            while todo:
                for succ in graph.get(todo.pop(), []):
                    if succ not in seen:
                        seen.add(succ)
                        todo.append(succ)
            reach[node] = seen
        return reach[node]

    cycles, done = [], set()
    for node in sorted(graph):
        if node in done or node not in reachable(node):
            continue
        group = {n for n in reachable(node) if node in reachable(n)}
        done |= group
        cycles.append(
            find_cycle({n: [s for s in graph.get(n, []) if s in group] for n in group})
        )
    return cycles


def unit_of(path: str) -> str:
    """A file's unit: its folder and name without the suffix (torch/call.h
    and torch/call.cpp are torch/call)."""
    p = PurePosixPath(path)
    return str(p.with_suffix(""))


def unit_graph(local: dict[str, list[str]]) -> dict[str, list[str]]:
    """The include graph between units (a unit including itself dropped)."""
    graph: dict[str, list[str]] = {}
    for path, included in local.items():
        edges = graph.setdefault(unit_of(path), [])
        for inc in included:
            target = unit_of(inc)
            if target != unit_of(path) and target not in edges:
                edges.append(target)
            graph.setdefault(target, [])
    return graph


def folder_of(path: str) -> str:
    return path.split("/", 1)[0]


# Which support folders each folder may include (its own included); see the
# folders' README.md. Checked for every file of the folder.
FOLDER_INCLUDES = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "runtime": {"core", "runtime"},
    "torch": {"core", "runtime", "torch"},
    "dispatcher": {"core", "dispatcher", "torch"},
}
# The generated headers (generated/, rendered from the tool's tables) each
# folder includes.
FOLDER_GENERATED = {
    "core": {"dtype_table.h", "platform_table.h"},
    "kernels": {"native_kernels.h"},
    "runtime": set(),
    "torch": {"torch_tables.h"},
    "dispatcher": set(),
}
# Torch-free folders: no header of torch, ATen, c10 or Python, directly or
# through what they include.
TORCH_FREE = ("core", "kernels", "runtime")
TORCH_HEADER = re.compile(r"^(ATen|c10|torch|caffe2|pybind11)/|^Python\.h$")
# Files of the C++ library, which links no Python: no Python header (nor
# torch's Python bindings, torch/csrc), directly or not.
PYTHON_FREE = (
    "dispatcher/",
    "torch/aten/",
    "torch/aten_convert.",
    "torch/lane.h",
    "torch/library_link.h",
)
PYTHON_HEADER = re.compile(r"^Python\.h$|^pybind11/|^torch/csrc/")
# The library's ATen conversions (torch/aten/) include of the rest of torch/
# only its torch-free headers.
ATEN_DIR = "torch/aten/"
ATEN_TORCH_INCLUDES = {"torch/lane.h", "torch/library_link.h"}
# The only file of the bridge that tests torch's version (torch_compat.h).
VERSION_TEST = re.compile(
    r"\bTORCH_VERSION_(MAJOR|MINOR)\b|\bINFINI_OPS_TORCH_AT_LEAST\b"
)
VERSION_FILE = "torch/torch_compat.h"


def folder_violations(src: Sources) -> list[str]:
    """Each include that breaks its folder's rules, as a line of text."""
    found = []
    for path in src.files:
        folder = folder_of(path)
        if folder not in FOLDER_INCLUDES:
            found.append(f"{path}: folder {folder}/ has no rules (FOLDER_INCLUDES)")
            continue
        for inc in src.local[path]:
            if folder_of(inc) not in FOLDER_INCLUDES[folder]:
                found.append(
                    f"{path} includes {inc}: {folder}/ may include only "
                    f"{sorted(FOLDER_INCLUDES[folder])}"
                )
        for inc in src.generated[path]:
            if inc not in FOLDER_GENERATED[folder]:
                found.append(
                    f'{path} includes "{inc}", not a support file nor a '
                    f"generated header {folder}/ takes"
                )
        if folder in TORCH_FREE:
            for dep in src.closure(path):
                for inc in src.system[dep]:
                    if TORCH_HEADER.search(inc):
                        found.append(
                            f"{path} reaches <{inc}> (in {dep}): {folder}/ is torch-free"
                        )
        if path.startswith(ATEN_DIR):
            for inc in src.local[path]:
                beside = folder_of(inc) == "torch" and not inc.startswith(ATEN_DIR)
                if beside and inc not in ATEN_TORCH_INCLUDES:
                    found.append(
                        f"{path} includes {inc}: {ATEN_DIR} takes only "
                        f"{sorted(ATEN_TORCH_INCLUDES)} of torch/"
                    )
        if path.startswith(PYTHON_FREE):
            for dep in src.closure(path):
                for inc in src.system[dep]:
                    if PYTHON_HEADER.search(inc):
                        found.append(
                            f"{path} reaches <{inc}> (in {dep}): the library's "
                            "files include no Python header"
                        )
    return found


def torch_free_violations(src: Sources, headers: list[str]) -> list[str]:
    """headers (and what they include) that reach a torch header."""
    found = []
    for header in headers:
        for dep in src.closure(header):
            for inc in src.system[dep]:
                if TORCH_HEADER.search(inc) and inc != "Python.h":
                    found.append(f"{header} reaches <{inc}> (in {dep})")
    return found


def version_violations(files: dict[str, str]) -> list[str]:
    return [
        path
        for path, text in sorted(files.items())
        if path != VERSION_FILE and VERSION_TEST.search(text)
    ]


_INSTALL = re.compile(r"\binstall\(\s*(FILES|DIRECTORY)\b(.*?)\bDESTINATION\b", re.S)
_CPP_PATH = re.compile(r'"\$\{CMAKE_CURRENT_SOURCE_DIR\}/cpp/([^"]+)"')


def installed_headers(cmake_text: str, files: list[str]) -> set[str]:
    """The support headers (of files) that cmake_text's install(FILES ...)
    and install(DIRECTORY ... PATTERN "*.h") commands install."""
    installed = set()
    for kind, args in _INSTALL.findall(cmake_text):
        for path in _CPP_PATH.findall(args):
            if kind == "FILES":
                installed.add(path)
            else:
                installed |= {
                    f for f in files if f.startswith(path + "/") and f.endswith(".h")
                }
    return installed


def install_violations(
    src: Sources, installed: set[str], texts: dict[str, str]
) -> list[str]:
    """Installed headers that include a support header not installed, or
    have no include guard (#ifndef INFINI_OPS_..._H_ and its #define)."""
    found = []
    for header in sorted(installed):
        for inc in src.local.get(header, []):
            if inc not in installed:
                found.append(f"{header} includes {inc}, which is not installed")
        guard = re.search(
            r"^#ifndef (INFINI_OPS_\w+_H_)\s*\n#define (\w+)", texts[header], re.M
        )
        if not guard or guard[1] != guard[2]:
            found.append(
                f"{header} has no include guard (two libraries' copies may meet)"
            )
    return found


def readme_missing(root: Path) -> list[str]:
    """The folders directly under root without a README.md."""
    return sorted(
        d.name for d in root.iterdir() if d.is_dir() and not (d / "README.md").is_file()
    )


# --- The support as it is ------------------------------------------------------------


def _texts() -> dict[str, str]:
    return {
        p.relative_to(SUPPORT_CPP).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(SUPPORT_CPP.rglob("*"))
        if p.is_file() and p.suffix in SUFFIXES
    }


def _sources() -> Sources:
    return Sources(_texts())


def test_the_support_is_read():
    src = _sources()
    assert "torch/call.cpp" in src.files and "core/core.h" in src.files
    assert "torch/signature.h" in src.local["torch/call.h"]
    assert "dtype_table.h" in src.generated["core/data_type.h"]


def _report(cycles: list[list[str]]) -> str:
    return "; ".join(" -> ".join(c) for c in cycles)


def test_include_graph_is_acyclic():
    cycles = all_cycles(_sources().local)
    assert not cycles, "include cycles: " + _report(cycles)


def test_no_file_calls_back_into_its_caller():
    cycles = all_cycles(unit_graph(_sources().local))
    assert not cycles, (
        "units (a .h and the .cpp of its name) that include each other, directly "
        "or not: " + _report(cycles)
    )


def test_folders_keep_their_rules():
    assert folder_violations(_sources()) == []


def test_torch_version_is_tested_in_torch_compat_only():
    files = _texts()
    assert VERSION_TEST.search(files[VERSION_FILE])
    assert version_violations(files) == []


def _generated_includes(name: str, src: Sources) -> list[str]:
    quoted, _ = includes_of((GENERATED / name).read_text(encoding="utf-8"))
    return [q for q in quoted if q in src.local]


def test_bindings_and_dispatch_headers_are_torch_free():
    """What the generated bindings and dispatch include of the support (and
    everything that includes) has no torch header: those TUs compile without
    ATen (torch/README.md, runtime/README.md)."""
    src = _sources()
    headers = _generated_includes("bindings.cpp", src) + _generated_includes(
        "ops.cpp", src
    )
    assert "torch/converters.h" in headers and "torch/call.h" in headers, headers
    assert torch_free_violations(src, headers) == []


def test_aten_conversions_are_one_translation_unit():
    """torch/aten_convert.cpp is the library's one TU of the ATen
    conversions: it includes every torch/aten/*.cpp (nothing else compiles
    them), and torch/aten_convert.h every torch/aten/*.h."""
    src = _sources()
    aten = [f for f in src.files if f.startswith("torch/aten/")]
    assert aten
    for suffix, umbrella in (
        (".cpp", "torch/aten_convert.cpp"),
        (".h", "torch/aten_convert.h"),
    ):
        want = {f for f in aten if f.endswith(suffix)}
        assert want <= set(src.local[umbrella]), sorted(want - set(src.local[umbrella]))


def test_installed_headers_are_complete_and_guarded():
    """A C++ caller of an installed library compiles against include/<name>/:
    every support header an installed one includes must be installed too."""
    texts = _texts()
    src = Sources(texts)
    installed = installed_headers(CMAKE_LISTS.read_text(encoding="utf-8"), src.files)
    assert {
        "core/core.h",
        "torch/aten_convert.h",
        "torch/lane.h",
    } <= installed, installed
    assert install_violations(src, installed, texts) == []


def test_every_folder_has_a_readme():
    assert readme_missing(SUPPORT_CPP) == []
    assert (SUPPORT_CPP / "torch" / "aten" / "README.md").is_file()


# --- Each check can fail ---------------------------------------------------------------


def test_find_cycle_can_fail():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert all_cycles({"a": ["b"], "b": ["c"], "c": []}) == []
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    # Two separate cycles are both reported.
    graph = {"a": ["b"], "b": ["a", "c"], "c": ["d"], "d": ["e"], "e": ["d"]}
    assert all_cycles(graph) == [["a", "b", "a"], ["d", "e", "d"]]


def test_include_cycle_check_can_fail():
    src = Sources({"x/a.h": '#include "x/b.h"\n', "x/b.h": '#include "x/a.h"\n'})
    assert all_cycles(src.local) == [["x/a.h", "x/b.h", "x/a.h"]]


def test_call_back_check_can_fail():
    """torch/call and torch/torch_function as they were: the files' graph has
    no cycle, the units' has."""
    src = Sources(
        {
            "torch/call.h": '#include "torch/torch_function.h"\n',
            "torch/call.cpp": '#include "torch/call.h"\n',
            "torch/torch_function.h": '#include "torch/signature.h"\n',
            "torch/torch_function.cpp": '#include "torch/torch_function.h"\n'
            '#include "torch/call.h"\n',
            "torch/signature.h": "",
        }
    )
    assert all_cycles(src.local) == []
    assert all_cycles(unit_graph(src.local)) == [
        ["torch/call", "torch/torch_function", "torch/call"]
    ]


def test_folder_rules_can_fail():
    src = Sources(
        {
            "core/a.h": '#include "torch/b.h"\n#include "torch_tables.h"\n',
            "torch/b.h": "#include <ATen/core/Tensor.h>\n",
            "runtime/c.h": '#include "core/d.h"\n',
            "core/d.h": "#include <c10/util/Half.h>\n",
            "dispatcher/e.h": '#include "kernels/f.h"\n#include <Python.h>\n',
            "kernels/f.h": "",
            "misc/g.h": "",
            "torch/aten/h.cpp": '#include "torch/call.h"\n#include "torch/lane.h"\n',
            "torch/call.h": "",
            "torch/lane.h": "",
        }
    )
    found = "\n".join(folder_violations(src))
    assert "core/a.h includes torch/b.h" in found
    assert 'core/a.h includes "torch_tables.h"' in found
    assert "core/a.h reaches <ATen/core/Tensor.h> (in torch/b.h)" in found
    assert "runtime/c.h reaches <c10/util/Half.h> (in core/d.h)" in found
    assert "dispatcher/e.h includes kernels/f.h" in found
    assert "dispatcher/e.h reaches <Python.h>" in found
    assert "misc/g.h: folder misc/ has no rules" in found
    assert "torch/aten/h.cpp includes torch/call.h" in found
    assert "torch/aten/h.cpp includes torch/lane.h" not in found
    assert (
        folder_violations(
            Sources({"core/a.h": '#include "core/b.h"\n', "core/b.h": ""})
        )
        == []
    )


def test_torch_free_headers_check_can_fail():
    src = Sources(
        {
            "torch/call.h": '#include "torch/x.h"\n#include <Python.h>\n',
            "torch/x.h": "#include <ATen/core/Tensor.h>\n",
        }
    )
    assert torch_free_violations(src, ["torch/call.h"]) == [
        "torch/call.h reaches <ATen/core/Tensor.h> (in torch/x.h)"
    ]


def test_version_check_can_fail():
    files = {
        VERSION_FILE: "#if INFINI_OPS_TORCH_AT_LEAST(2, 13)\n",
        "torch/call.cpp": "#if TORCH_VERSION_MINOR > 12\n",
    }
    assert version_violations(files) == ["torch/call.cpp"]


def test_install_check_can_fail():
    cmake = """
install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/cpp/core" DESTINATION "${_d}"
  FILES_MATCHING PATTERN "*.h")
install(FILES
  "${CMAKE_CURRENT_SOURCE_DIR}/cpp/torch/aten_convert.h"
  DESTINATION "${_d}/torch")
"""
    guarded = "#pragma once\n#ifndef INFINI_OPS_X_H_\n#define INFINI_OPS_X_H_\n"
    texts = {
        "core/core.h": guarded,
        "core/observe.cpp": "",
        "torch/aten_convert.h": guarded
        + '#include "torch/aten/handles.h"\n#include "core/core.h"\n',
        "torch/aten/handles.h": "#pragma once\n",
    }
    src = Sources(texts)
    installed = installed_headers(cmake, src.files)
    assert installed == {"core/core.h", "torch/aten_convert.h"}
    assert install_violations(src, installed, texts) == [
        "torch/aten_convert.h includes torch/aten/handles.h, which is not installed"
    ]
    texts["core/core.h"] = "#pragma once\n"
    assert install_violations(Sources(texts), installed, texts)[0] == (
        "core/core.h has no include guard (two libraries' copies may meet)"
    )


def test_readme_check_can_fail(tmp_path):
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "README.md").write_text("core\n")
    (tmp_path / "torch").mkdir()
    assert readme_missing(tmp_path) == ["torch"]
