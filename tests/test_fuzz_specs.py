"""Fuzzing the generator with spec files: random YAML documents and random
mutations of the real specs in op_specs/. Every outcome must be a success or
exit code 2 with `path:line:col: message` lines, never a traceback.

Each document runs `infiniops-codegen generate --check` in-process (nothing
is written). The schema database and the Jinja environment are cached for
the test's duration (they are read-only), which makes a run ~20x faster.
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from infiniops_codegen.render import pipeline, sources as render
from infiniops_codegen.opspec.entries import OP_KEYS, SETTING_KEYS, TOP_KEYS

REPO = Path(__file__).resolve().parent.parent
REAL_SPECS = sorted((REPO / "op_specs").glob("*.yaml"))
SEED = 20261202
LOCATED = re.compile(r"^(?:\x1b\[[0-9;]*m)?specs/[\w.]+:\d+:\d+: \S")

# Read by pytest_terminal_summary (tests/conftest.py).
STATS = {"documents": 0, "errors": 0, "successes": 0}


@pytest.fixture(scope="module")
def fast_generation():
    """The read-only inputs of generation, loaded once."""
    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "load_schema_db", functools.cache(pipeline.load_schema_db))
    patch.setattr(render, "_environment", functools.cache(render._environment))
    yield
    patch.undo()


@pytest.fixture
def check_document(tmp_path_factory, runner, helpers, monkeypatch, fast_generation):
    """Run generate --check on {file name: text}; assert the outcome."""
    from infiniops_codegen.cli import main

    def check(files: dict[str, str]) -> None:
        work = tmp_path_factory.mktemp("fuzz")
        monkeypatch.chdir(work)
        (work / "specs").mkdir()
        for name, text in files.items():
            (work / "specs" / name).write_text(text, encoding="utf-8")
        result = runner.invoke(
            main, ["generate", "--specs", "specs", "--out", "out", "--check"]
        )
        STATS["documents"] += 1
        shown = "\n".join(f"--- {n}\n{t}" for n, t in files.items())
        if result.exception is not None and not isinstance(
            result.exception, SystemExit
        ):
            import traceback

            trace = "".join(traceback.format_exception(*result.exc_info))
            pytest.fail(f"generate raised on:\n{shown}\n{trace}", pytrace=False)
        assert "Traceback" not in result.output, shown
        if result.exit_code in (0, 1):  # generated; --check saw differences
            STATS["successes"] += 1
            return
        assert (
            result.exit_code == 2
        ), f"exit {result.exit_code}:\n{shown}\n{result.output}"
        STATS["errors"] += 1
        located = [ln for ln in result.output.splitlines() if LOCATED.match(ln)]
        assert located, f"an error without file:line:col:\n{shown}\n{result.output}"
        assert not (work / "out").exists()

    return check


# --- Random documents ----------------------------------------------------------------

KEYS = list(TOP_KEYS + OP_KEYS + SETTING_KEYS) + [
    "cpu",
    "nvidia",
    "shapes",
    "float32",
    "self",
    "dim",
]
ATEN = ["abs.out", "add.out", "sum.IntList_out", "topk.values", "cat.out", "abz.out"]
SIGNATURES = [
    "f(Tensor input, *, Tensor(a!) out) -> Tensor(a!)",
    "f(Tensor input, int x=2, *, Tensor(a!) out) -> Tensor(a!)",
    "f(Tensor input) -> Tensor",
    "g(Tensor(a!) out) -> ()",
    "f(",
]
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(KEYS + ATEN + SIGNATURES + ["", "all", "[", "{", "'"]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), leaves), inner, max_size=4),
    ),
    max_leaves=16,
)
documents = st.one_of(
    values,
    st.dictionaries(st.sampled_from(TOP_KEYS), values, max_size=2),
    st.fixed_dictionaries(
        {"ops": st.lists(st.one_of(st.sampled_from(ATEN), values), max_size=4)}
    ),
)


def _dump(document) -> str:
    return yaml.safe_dump(document, default_flow_style=None, allow_unicode=True)


@seed(SEED)
@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(document=documents, second=st.one_of(st.none(), documents))
def test_random_documents(check_document, document, second):
    files = {"a.yaml": _dump(document)}
    if second is not None:
        files["b.yaml"] = _dump(second)
    check_document(files)


@seed(SEED + 1)
@settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(text=st.text(alphabet=":-[]{}#&*!|>'\"%@` \n\tab.0,?", max_size=80))
def test_random_text(check_document, text):
    check_document({"a.yaml": text})


# --- Mutations of the real specs -----------------------------------------------------

# Characters that change YAML structure, and tokens that change meaning.
PUNCTUATION = list(":-[]{}#,'\"\t |>&*!") + ["\n", "  "]
TOKENS = list(OP_KEYS + SETTING_KEYS) + ["abs.out", "add.Tensor", "cpu", "x", "0", "-"]


def _window(text: str, rng: random.Random) -> str:
    """A random run of entries from a real spec, with its 'ops:' header, so
    that one generation stays small."""
    lines = text.splitlines(keepends=True)
    if len(lines) <= 24:
        return text
    header = next((k for k, ln in enumerate(lines) if ln.startswith("ops:")), None)
    if header is None:
        return text
    start = rng.randrange(header + 1, len(lines))
    return "".join(lines[: header + 1] + lines[start : start + 16])


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    kind = rng.choice(
        ["delete", "insert", "replace", "token", "dup", "drop", "swap", "indent"]
    )
    k = rng.randrange(len(lines))
    line = lines[k]
    pos = rng.randrange(len(line) + 1)
    if kind == "delete" and line:
        n = rng.randint(1, 4)
        lines[k] = line[:pos] + line[pos + n :]
    elif kind == "insert":
        lines[k] = line[:pos] + rng.choice(PUNCTUATION) + line[pos:]
    elif kind == "replace" and line:
        lines[k] = line[:pos] + rng.choice(PUNCTUATION) + line[pos + 1 :]
    elif kind == "token":
        words = list(re.finditer(r"[\w.]+", line))
        if words:
            w = rng.choice(words)
            lines[k] = line[: w.start()] + rng.choice(TOKENS) + line[w.end() :]
    elif kind == "dup":
        lines.insert(k, line)
    elif kind == "drop":
        del lines[k]
    elif kind == "swap" and len(lines) > 1:
        j = rng.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    elif kind == "indent":
        lines[k] = (
            (" " * rng.choice([1, 2, 3, 4]) + line)
            if rng.random() < 0.5
            else line.lstrip()
        )
    return "".join(lines)


@seed(SEED + 2)
@settings(
    max_examples=500,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    spec=st.sampled_from(REAL_SPECS),
    rng_seed=st.integers(0, 2**32 - 1),
    mutations=st.integers(1, 3),
)
def test_mutated_real_specs(check_document, spec, rng_seed, mutations):
    rng = random.Random(rng_seed)
    text = _window(spec.read_text(encoding="utf-8"), rng)
    for _ in range(mutations):
        text = _mutate(text, rng)
    check_document({spec.name: text})


def test_the_real_specs_unmutated_succeed(check_document):
    """The baseline of the mutations: every real spec file alone generates."""
    before = STATS["successes"]
    for spec in REAL_SPECS:
        check_document({spec.name: spec.read_text(encoding="utf-8")})
    assert STATS["successes"] - before == len(REAL_SPECS)
