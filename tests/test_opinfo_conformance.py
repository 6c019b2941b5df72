"""Conformance with PyTorch on PyTorch's own sample inputs (OpInfo).

Every sample of every OpInfo entry (torch.testing._internal's op_db) of every
op group of the built module is called as `ops.<group>(input, *args,
**kwargs)`, without and with out=, and compared with PyTorch's call
(infiniops_codegen/harness/opinfo.py; docs/conformance.md). The default build
must have no failure and at most 2% of the applicable checks not callable with
torch's call syntax. The classifier itself is tested on fake modules, so a
wrong result, an alias, a wrong exception or a missing out= is seen to fail.

The end of the run prints the totals (a plugin registered by the fixture).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from infiniops_codegen.harness import opinfo

ROOT = Path(__file__).resolve().parent.parent
SKIPS_FILE = ROOT / "tests" / "skips.yaml"


def _manifest():
    from runtime_conftest_helpers import manifest

    return manifest()


class _Summary:
    """Prints the totals in pytest's terminal summary."""

    def __init__(self, report: opinfo.Report):
        self.report = report

    def pytest_terminal_summary(self, terminalreporter):
        lines = self.report.lines()
        start = next(k for k, line in enumerate(lines) if line.startswith("total"))
        for line in lines[start : start + 2]:
            terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def report(ops, request) -> opinfo.Report:
    result = opinfo.run(ops, _manifest(), opinfo.load_skips(SKIPS_FILE))
    request.config.pluginmanager.register(_Summary(result), "opinfo-conformance")
    return result


def _listing(report, status, limit=60) -> str:
    checks = report.checks(status)
    lines = [
        f"{group}: {c.entry} sample {c.index} ({c.mode}): {c.reason} | {c.sample}"
        for group, c in checks[:limit]
    ]
    more = f"\n... and {len(checks) - limit} more" if len(checks) > limit else ""
    return "\n".join(lines) + more


def test_no_sample_fails(report):
    failed = report.totals()[opinfo.FAILED]
    assert not failed, f"{failed} checks failed:\n" + _listing(report, opinfo.FAILED)


def test_not_callable_within_bound(report):
    share = report.not_callable_share()
    reasons = "\n".join(
        f"{sum(groups.values()):5}  {reason}  [{', '.join(sorted(groups))}]"
        for reason, groups in list(report.reasons(opinfo.NOT_CALLABLE).items())[:40]
    )
    assert share <= opinfo.MAX_NOT_CALLABLE, (
        f"{100 * share:.1f}% of the applicable checks cannot be called with "
        f"torch's call syntax (bound {100 * opinfo.MAX_NOT_CALLABLE:.0f}%), "
        f"by reason:\n{reasons}"
    )


def test_every_opinfo_skip_is_used(report):
    assert not report.unused_skips, (
        "entries of the opinfo: section of tests/skips.yaml that match no "
        f"check (remove them): {report.unused_skips}"
    )


def test_every_group_is_counted_or_listed(report):
    groups = set(opinfo.groups_of(_manifest()))
    counted = {r.group for r in report.ops}
    assert counted | set(report.without_opinfo) == groups
    assert report.totals()[opinfo.PASSED] > 0


# -- the classifier, on fake modules --------------------------------------------


def _torch(name):
    import torch

    return getattr(torch, name)


def _run(only, manifest=None, **functions):
    return opinfo.run(SimpleNamespace(**functions), manifest or _manifest(), only=only)


def _without(manifest, name: str):
    """The manifest as if the build lacked op `name`."""
    import dataclasses

    functions = {
        f: tuple(dataclasses.replace(o, op=None) if o.op == name else o for o in ov)
        for f, ov in manifest.functions.items()
    }
    ops = tuple(op for op in manifest.ops if op.name != name)
    return dataclasses.replace(manifest, ops=ops, functions=functions)


def test_torch_itself_passes():
    """torch's own functions in place of the module: no false failures (and
    structseq types, out= identity and version bumps are torch's)."""
    report = _run(["add", "max", "clone"], **{n: _torch(n) for n in ("add", "max")})
    totals = report.totals()
    assert totals[opinfo.FAILED] == 0, _listing(report, opinfo.FAILED)
    assert totals[opinfo.PASSED] > 20
    # clone is absent from the fake module: every call without out= says so
    # (torch.clone takes no out=: not applicable)
    clone = next(r for r in report.ops if r.group == "clone")
    plain = {(c.status, c.reason) for c in clone.checks if c.mode == opinfo.PLAIN}
    assert plain == {(opinfo.NOT_CALLABLE, "the module has no function 'clone'")}
    out = {c.status for c in clone.checks if c.mode == opinfo.OUT}
    assert out == {opinfo.NOT_APPLICABLE}


def test_wrong_values_fail():
    import torch

    def add(*args, out=None, **kwargs):
        result = torch.add(*args, **kwargs) + 1
        return result if out is None else out.copy_(result)

    report = _run(["add"], add=add)
    failures = report.checks(opinfo.FAILED)
    assert {c.mode for _, c in failures} == {opinfo.PLAIN, opinfo.OUT}
    assert all("values differ" in c.reason for _, c in failures)
    # only zero-size samples (no value to differ) pass
    passed = report.checks(opinfo.PASSED)
    assert passed and all("Tensor[0," in c.sample for _, c in passed)
    assert not report.ok()


def test_plain_tuple_for_structseq_fails():
    import torch

    def max(*args, **kwargs):  # noqa: A001 - the group's name
        result = torch.max(*args, **kwargs)
        return tuple(result) if isinstance(result, tuple) else result

    report = _run(["max"], max=max)
    reasons = [c.reason for _, c in report.checks(opinfo.FAILED)]
    assert any(
        "returns tuple where torch returns torch.return_types" in r for r in reasons
    )


def test_alias_of_input_fails():
    import torch

    def clone(x, *args, out=None, **kwargs):
        return x if out is None else torch.clone(x, *args, out=out, **kwargs)

    report = _run(["clone"], clone=clone)
    reasons = {c.reason for _, c in report.checks(opinfo.FAILED)}
    assert reasons == {"result 0 aliases an input (torch's is a fresh tensor)"}


def test_inputs_are_compared_with_torchs():
    """native_batch_norm writes its running statistics (inputs 3 and 4) in
    training mode: a module that leaves them alone fails, one that writes
    them as torch does passes."""
    import torch

    def frozen(x, weight, bias, mean, var, *args, **kwargs):
        mean = None if mean is None else mean.clone()
        var = None if var is None else var.clone()
        return torch.native_batch_norm(x, weight, bias, mean, var, *args, **kwargs)

    report = _run(["native_batch_norm"], native_batch_norm=frozen)
    reasons = {c.reason for _, c in report.checks(opinfo.FAILED)}
    assert reasons == {
        "input tensor 3 holds other values after the call (torch writes it)"
    }
    report = _run(["native_batch_norm"], native_batch_norm=torch.native_batch_norm)
    assert report.totals()[opinfo.FAILED] == 0


def test_exceptions_are_classified():
    def type_error(*args, **kwargs):
        raise TypeError("abs(): no such argument")

    def runtime_error(*args, **kwargs):
        raise RuntimeError("boom")

    report = _run(["abs"], abs=type_error)
    checks = [c for _, c in report.checks()]
    assert {c.status for c in checks} == {opinfo.NOT_CALLABLE}
    assert checks[0].reason == "abs(): no such argument"
    assert report.not_callable_share() == 1.0 and not report.ok()

    report = _run(["abs"], abs=runtime_error)
    assert {c.status for _, c in report.checks()} == {opinfo.FAILED}
    assert (
        "raises RuntimeError: boom where torch returns" in report.checks()[0][1].reason
    )


def test_not_implemented_is_not_callable_only_for_lacking_overloads():
    """NotImplementedError is what the module raises for a call that matches
    an overload the build lacks: not callable there (max.binary resolves to
    max.other, which this build is made to lack), a failure where the build
    has the overload (max.dim)."""

    def max(*args, **kwargs):  # noqa: A001 - the group's name
        raise NotImplementedError("max(): not in this build")

    report = _run(["max"], _without(_manifest(), "max_other"), max=max)
    by_entry = {}
    for _, c in report.checks():
        by_entry.setdefault(c.entry, set()).add(c.status)
    assert by_entry["max.binary"] == {opinfo.NOT_CALLABLE}
    assert opinfo.FAILED in by_entry["max.reduction_with_dim"]
    lacking = [c.reason for _, c in report.checks(opinfo.NOT_CALLABLE)]
    assert any("aten.max.other, an overload the build lacks" in r for r in lacking)


def test_out_not_returned_fails():
    import torch

    def neg(x, *args, out=None, **kwargs):
        if out is None:
            return torch.neg(x, *args, **kwargs)
        torch.neg(x, *args, out=out, **kwargs)
        return out.clone()

    report = _run(["neg"], neg=neg)
    reasons = {c.reason for _, c in report.checks(opinfo.FAILED)}
    assert reasons == {"does not return the out= tensors as torch does"}


def test_skips_are_counted(tmp_path):
    path = tmp_path / "skips.yaml"
    path.write_text(
        "opinfo:\n"
        "  - op: add\n    samples: [0]\n    out: true\n    reason: one out= call\n"
        "  - op: nn.functional.relu\n    reason: 'not a group of --ops add'\n"
    )
    skips = opinfo.load_skips(path)
    report = opinfo.run(SimpleNamespace(add=_torch("add")), _manifest(), skips, ["add"])
    skipped = report.checks(opinfo.SKIPPED)
    assert [(c.index, c.mode, c.reason) for _, c in skipped] == [
        (0, opinfo.OUT, "one out= call")
    ]
    assert report.unused_skips == []  # relu is outside --ops add

    path.write_text("opinfo:\n  - op: add\n")
    with pytest.raises(ValueError, match="reason"):
        opinfo.load_skips(path)
