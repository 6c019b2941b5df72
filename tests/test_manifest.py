"""The manifest as the tools read it (infiniops_codegen/model/manifest.py), the
Python signatures it shares with the .pyi stub, and the module-level names no
op may take (infiniops_codegen/model/module_api.py)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infiniops_codegen.model import manifest, module_api
from infiniops_codegen.render import pipeline
from infiniops_codegen.base.locations import TEMPLATE_DIR

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "generated"
FIXTURES = REPO / "tests" / "fixtures"


# --- the reader -------------------------------------------------------------------


def test_reads_the_committed_manifest_typed():
    m = manifest.generated()
    raw = json.loads((DEFAULT_OUT / "manifest.json").read_text())
    assert m.names == tuple(sorted(op["name"] for op in raw["ops"]))
    assert m.selection == "default" and "torch_version" not in raw
    assert m.platforms[0] == "cpu" and len(m.ops) == raw["op_count"]
    add = m.op("add")
    assert m.op("add.out") is add  # by ATen overload too
    assert [a.python_name for a in add.inputs] == ["input", "other", "alpha"]
    assert [a.name for a in add.out_args] == ["out"]
    assert add.implementations.native_dtypes("cpu") == (
        "float32",
        "float16",
        "bfloat16",
    )
    assert add.implementations.native_limit("cpu", "float32") == 2048
    assert add.implementations.native_limit("nvidia", "float32") is None
    assert add.implementations.torch == m.platforms  # "all"
    assert m.op("rms_norm").composite and m.op("rms_norm").aten is None
    with pytest.raises(manifest.ManifestError, match="did you mean 'topk'"):
        m.op("topkk")


def test_mutable_inputs_come_from_the_manifest():
    """`mutable` is torchgen's alias information (is_write of a non-out
    argument), recorded by the generator: no schema text is parsed."""
    ops = manifest.generated().by_name()
    assert ops["add"].mutable_inputs == ()
    assert all(not op.mutable_inputs for op in ops.values() if op.composite)


@pytest.mark.parametrize(
    "content, message",
    [
        ({"ops": [{"name": "x"}]}, "the manifest has no 'platforms'"),
        (
            {
                "selection": "default",
                "platforms": ["cpu"],
                "shard_count": 1,
                "shard_size": 1,
                "ops": [{"name": "x", "aten": "x.out"}],
            },
            "op 'x' has no 'arguments'",
        ),
        ([], "not an infiniops-codegen manifest"),
        (
            {
                "selection": "default",
                "platforms": ["cpu"],
                "shard_count": 1,
                "shard_size": 1,
                "ops": [
                    {
                        "name": "x",
                        "aten": "x.out",
                        "arguments": [
                            {
                                "name": "self",
                                "python_name": "input",
                                "kind": "tensor_tuple",
                                "role": "input",
                                "keyword_only": False,
                                "has_default": False,
                                "aten_type": "Tensor",
                            }
                        ],
                    }
                ],
            },
            "has the unknown kind 'tensor_tuple'",
        ),
    ],
    ids=["no_version", "no_arguments", "not_a_mapping", "unknown_kind"],
)
def test_a_malformed_manifest_is_one_located_error(tmp_path, content, message):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(content))
    with pytest.raises(manifest.ManifestError) as e:
        manifest.read(path)
    assert str(e.value).startswith(str(path)) and message in str(e.value)
    assert "\n" not in str(e.value)


# --- one signature for the stub and the manifest ----------------------------------


def _stub_functions(text: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(text)
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


def _stub_overloads(text: str) -> dict[str, list[ast.FunctionDef]]:
    """Name -> its declarations (several: @overload)."""
    result: dict[str, list[ast.FunctionDef]] = {}
    for f in ast.parse(text).body:
        if isinstance(f, ast.FunctionDef):
            result.setdefault(f.name, []).append(f)
    return result


def _is_overload(f: ast.FunctionDef) -> bool:
    return any(getattr(d, "id", None) == "overload" for d in f.decorator_list)


def _same_signature(manifest_text: str, stub: ast.FunctionDef, name=None) -> bool:
    (parsed,) = ast.parse(f"def {manifest_text}: ...").body
    return (
        (name or parsed.name) == stub.name
        and ast.dump(parsed.args) == ast.dump(stub.args)
        and ast.dump(parsed.returns) == ast.dump(stub.returns)
    )


@pytest.mark.parametrize("where", ["committed", "basic_fixture"])
def test_the_manifest_signature_is_the_stubs(where, basic_specs):
    """Every op's `python_signature` parses to the very parameters, defaults
    and return type the .pyi stub declares (both are rendered from
    python_signature.python_signature)."""
    if where == "committed":
        files = {
            "infiniops.pyi": (DEFAULT_OUT / "infiniops.pyi").read_text(),
            "manifest.json": (DEFAULT_OUT / "manifest.json").read_text(),
        }
    else:
        files = pipeline.generate(basic_specs).files
    stub = _stub_overloads(files["infiniops.pyi"])
    read = manifest.from_data(json.loads(files["manifest.json"]))
    assert read.ops
    # An op is declared under its own name, unless a torch-like function
    # took the name, and under the function it alone serves; a function of
    # several ops declares @overloads (those an earlier one covers left out:
    # python_signature._distinct), the first exactly its first op's.
    taken = set(read.functions)
    for op in read.ops:
        if op.name not in taken:
            assert _same_signature(op.python_signature, stub[op.name][0]), op.name
    for name, overloads in read.functions.items():
        served = [o.op for o in overloads if o.op is not None]
        first = read.op(served[0])
        assert _same_signature(first.python_signature, stub[name][0], name), name
        assert len(stub[name]) <= len(served), name
        if len(stub[name]) > 1:
            assert all(_is_overload(d) for d in stub[name]), name


def test_the_stub_template_lays_out_the_shared_signature():
    """The stub's op parameters come from python_signature(), never from a
    second loop over the arguments."""
    text = (TEMPLATE_DIR / "module.pyi.j2").read_text()
    assert "stub_entries(opset)" in text
    assert "a.py_type" not in text and "a.py_name" not in text
    source = (TEMPLATE_DIR.parent / "python_signature.py").read_text()
    stub_entries = source[source.index("def stub_entries") :]
    assert "python_signature(" in stub_entries and "py_type" not in stub_entries


# --- reserved module names -------------------------------------------------------


def test_every_module_function_is_in_the_method_table_once():
    text = (DEFAULT_OUT / "bindings.cpp").read_text()
    table = text[text.index("PyMethodDef kMethods[] = {") :]
    table = table[: table.index("};")]
    names = re.findall(r'^\s+\{"(\w+)",', table, re.M)
    assert len(names) == len(set(names))
    generated = manifest.generated()
    ops = set(generated.names) | set(generated.functions)
    assert set(names) - ops == {f.name for f in module_api.FUNCTIONS}


def test_the_stub_declares_every_module_function_and_attribute():
    text = (DEFAULT_OUT / "infiniops.pyi").read_text()
    stub = _stub_functions(text)
    for f in module_api.FUNCTIONS + module_api.PYTHON_FUNCTIONS:
        assert f.name in stub, f.name
    annotated = {
        node.target.id
        for node in ast.parse(text).body
        if isinstance(node, ast.AnnAssign)
    }
    assert set(module_api.ATTRIBUTES) <= annotated


def test_the_built_module_defines_exactly_the_reserved_names(ops):
    functions = manifest.of_build(ops.__file__.rsplit("/", 1)[0]).functions
    names = {n for n in dir(ops) if not n.startswith("__")}
    names -= set(ops.implementations()) | set(functions)
    public = {f.name for f in module_api.FUNCTIONS}
    public |= {a for a in module_api.ATTRIBUTES if not a.startswith("__")}
    # runtime.load's (docs/observability.md)
    public |= {f.name for f in module_api.PYTHON_FUNCTIONS}
    assert names == public
    assert ops.__torch_version__


@pytest.mark.parametrize(
    "name, reason",
    [
        ("direct_mode", "a function of the built module has this name"),
        ("set_direct_mode", "a function of the built module has this name"),
        ("_debug_probe", "names starting with '_debug_' are the module's test hooks"),
        ("selection", "an attribute of the built module has this name"),
        ("ops", "it is the library's C++ namespace (infini::ops)"),
    ],
)
def test_an_op_with_a_reserved_name_is_a_located_spec_error(
    tmp_path, monkeypatch, runner, helpers, name, reason
):
    monkeypatch.chdir(tmp_path)
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text(
        f"ops:\n  - abs.out\n  - {{aten: neg.out, name: {name}}}\n"
    )
    result = helpers.invoke(runner, "generate", "--specs", "specs", "--out", "out")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        f"specs/bad.yaml:3:27: op name '{name}' is reserved: {reason}"
    ), result.output
    assert not (tmp_path / "out").exists()


# --- runtime.load needs nothing of the generator ------------------------------------


def _modules_loaded_by(code: str) -> list[str]:
    """The project's, jinja2's, yaml's and torch's modules a fresh interpreter
    has loaded after running `code`."""
    code += (
        "\nimport sys\n"
        "print(sorted(k for k in sys.modules if k.startswith(('jinja2', "
        "'infiniops_codegen', 'yaml', 'torch'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def test_reading_a_manifest_imports_nothing_of_the_generator():
    code = (
        "from infiniops_codegen.model import manifest\n"
        "m = manifest.read('generated/manifest.json')\n"
        "assert m.op('add').inputs[0].kind.name == 'tensor'\n"
    )
    assert _modules_loaded_by(code) == [
        "infiniops_codegen",
        "infiniops_codegen._moved",
        "infiniops_codegen.base",
        "infiniops_codegen.base.locations",
        "infiniops_codegen.model",
        "infiniops_codegen.model.manifest",
        "infiniops_codegen.schema",
        "infiniops_codegen.schema.arg_kinds",
        "infiniops_codegen.schema.records",
    ]


def test_runtime_load_imports_no_generator_module(ops):
    code = (
        "from infiniops_codegen.runtime import load\n"
        f"m = load({str(Path(ops.__file__).parent)!r})\n"
        "assert m.implementations()\n"
    )
    loaded = [m for m in _modules_loaded_by(code) if not m.startswith("torch")]
    # base/project.py only without a build directory, base/sanitize.py only for a
    # sanitized build: `import infiniops` from a build directory runs this
    assert loaded == [
        "infiniops_codegen",
        "infiniops_codegen._moved",
        "infiniops_codegen.base",
        "infiniops_codegen.base.locations",
        "infiniops_codegen.base.torch_build",  # the build's torch against the installed
        "infiniops_codegen.runtime",
        "infiniops_codegen.runtime.loader",
        "infiniops_codegen.runtime.observe",  # ops.stats(), ops.trace(), ...
        "infiniops_codegen.runtime.torch_ops",  # torch.ops.<name>, when first needed
    ]
