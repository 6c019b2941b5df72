"""The native-kernel fuzzer (infiniops_codegen/harness/fuzz.py) on this
repository's own kernels, a few drawn cases each (the suite's build), and the
check command's refusal without a build. The full run, and wrong kernels
caught, are tests/test_check_fuzz.py (own_build)."""

import torch

from infiniops_codegen.harness import fuzz


def test_fuzzer_passes_this_repositorys_silu_and_rms_norm(ops):
    from runtime_conftest_helpers import manifest

    by_name = manifest().by_name()
    for name in ("silu", "rms_norm"):
        result = fuzz.fuzz_op(ops, by_name[name], examples=12)
        assert result.failures == [], result.failures
        # each claimed dtype was computed natively at least once
        assert set(result.native_ran) == {"float32", "float16", "bfloat16"}
        assert result.declined > 0  # float64, int32, ... were declined


def test_a_declining_kernel_is_held_to_an_unchanged_out(ops):
    from runtime_conftest_helpers import manifest

    op = manifest().by_name()["silu"]
    drawn = dict(
        dtype="float64",  # not claimed: the kernel must decline it
        kind="plain",
        plan={"self": fuzz.TensorSpec((3, 5))},
        mixed=False,
        layouts={"self": "sliced"},
        out="sliced",
        seed=3,
    )
    case = fuzz.build_case(op, drawn, "cpu")
    seen = fuzz.check_case(ops, op, case, "cpu", ("float32",))
    assert seen == {"native": False, "default_native": False}
    assert case.buffers[1].dtype == torch.float64


def test_check_refuses_a_project_without_a_build(tmp_path, runner, helpers):
    root = tmp_path / "p"
    assert helpers.invoke(runner, "init", root, "--name", "nobuild").exit_code == 0
    result = helpers.invoke(
        runner, "--project", root, "check", "--build-dir", tmp_path / "none"
    )
    assert result.exit_code == 2
    assert "run 'infiniops-codegen build' first" in result.output
