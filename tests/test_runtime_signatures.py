"""Visible signatures (issue 16, point 4): every op of the built module
carries CPython's text signature, so inspect.signature() and help() show its
Python parameters, kinds and defaults: the same as the manifest's
python_signature (which the .pyi stub declares)."""

from __future__ import annotations

import ast
import inspect
import pydoc

from infiniops_codegen.model import manifest as manifest_reader


def _expected(text: str) -> list[tuple[str, str, object]]:
    """(name, kind, default) of each parameter of a python_signature text."""
    fn = ast.parse(f"def {text.split(' -> ')[0]}: ...").body[0]
    args = fn.args
    result = []
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(args.args, defaults):
        value = inspect.Parameter.empty if d is None else ast.literal_eval(d)
        result.append((a.arg, "POSITIONAL_OR_KEYWORD", value))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        value = inspect.Parameter.empty if d is None else ast.literal_eval(d)
        result.append((a.arg, "KEYWORD_ONLY", value))
    return result


def test_every_op_has_its_signature(ops):
    manifest = manifest_reader.of_build(ops.__file__.rsplit("/", 1)[0])
    assert len(manifest.ops) == len(ops.implementations())
    by_name = manifest.by_name()
    # ops.<name> is a torch-like function where one has the name: it shows
    # the signature of the first op serving it (its other ops keep theirs).
    shown = {
        name: next(o.op for o in overloads if o.op)
        for name, overloads in manifest.functions.items()
    }
    names = set(by_name) | set(shown)
    for name in sorted(names):
        op = by_name[shown.get(name, name)]
        signature = inspect.signature(getattr(ops, name))
        got = [(p.name, p.kind.name, p.default) for p in signature.parameters.values()]
        assert got == _expected(op.python_signature), name


def test_inspect_and_help_show_it(ops):
    assert str(inspect.signature(ops.add)) == (
        "(input, other, *, alpha=1, out=None, implementation='default', stream=None)"
    )
    text = pydoc.render_doc(ops.add, renderer=pydoc.plaintext)
    assert (
        "add(input, other, *, alpha=1, out=None, implementation='default', stream=None)"
        in text
    )
    assert (
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)" in text
    )
    assert ops.add.__doc__.startswith("add.out(Tensor self")  # the schema stays the doc
