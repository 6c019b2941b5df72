"""The lane (cpp/torch/lane.h): a call whose tensors ATen takes as they are
skips the library's core tensors and keeps the GIL. Which calls take it is
counted by the module's `_debug_lane_calls()` hook; that they compute and
behave as PyTorch's own call is the harness's `lane` path and the semantics
tests (version counters, modes, the profiler), which run every case on it."""

import contextlib
import threading

import pytest
import torch


@contextlib.contextmanager
def threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def took_lane(ops, call) -> bool:
    before = ops._debug_lane_calls()
    call()
    return ops._debug_lane_calls() - before == 1


def test_lane_is_on_by_default_and_switchable(ops):
    x, o = torch.randn(3), torch.empty(3)
    assert ops.lane() is True
    with threads(1):
        assert took_lane(ops, lambda: ops.abs(x, out=o))
        ops.set_lane(False)
        try:
            assert ops.lane() is False
            assert not took_lane(ops, lambda: ops.abs(x, out=o))
        finally:
            ops.set_lane(True)
    torch.testing.assert_close(o, x.abs())


def test_a_lane_call_is_torchs_call(ops):
    x, y, o = torch.randn(4, 5), torch.randn(4, 5), torch.empty(4, 5)
    v = o._version
    with threads(1):
        assert took_lane(ops, lambda: ops.mm(x, y.t(), out=torch.empty(4, 4)))
        assert took_lane(
            ops, lambda: ops.add(x, y, alpha=2, out=o, implementation="torch")
        )
    torch.testing.assert_close(o, x + 2 * y)
    assert o._version == v + 1  # the version bump of torch's out= call


def test_which_ops_keep_the_lane_at_several_threads(ops):
    """Several intra-op threads: only ops whose kernels' loops see raw
    pointers (TensorIterator) keep the GIL, so only they take the lane."""
    x, o = torch.randn(3), torch.empty(3)
    with threads(2):
        assert torch.get_num_threads() == 2
        assert not took_lane(ops, lambda: ops.abs(x, out=o))  # not TensorIterator
        assert took_lane(ops, lambda: ops.sqrt(x.abs(), out=o))  # TensorIterator


@pytest.mark.parametrize(
    "case",
    [
        "requires_grad",
        "inference",
        "conj",
        "subclass",
        "large",
        "stream",
        "native_default",
        "native_forced",
        "unsupported_dtype",
        "list_of_many",
        "list_element",
        "optional_list",
    ],
)
def test_what_takes_the_general_path(ops, case):
    x, o = torch.randn(3), torch.empty(3)
    call = lambda: ops.exp(x, out=o)  # noqa: E731
    expect_error = None
    if case == "requires_grad":
        x.requires_grad_()
        expect_error = RuntimeError  # torch: out= does not support autograd
    elif case == "inference":
        with torch.inference_mode():
            x = torch.randn(3)  # read outside inference mode: allowed
    elif case == "conj":
        x = torch.randn(3, dtype=torch.cfloat).conj()
        o = torch.empty(3, dtype=torch.cfloat)
    elif case == "subclass":

        class Sub(torch.Tensor):
            pass

        x = x.as_subclass(Sub)
    elif case == "large":
        x, o = torch.randn(40000), torch.empty(40000)
    elif case == "stream":
        call = lambda: ops.exp(x, out=o, stream=None)  # noqa: E731
        with threads(1):
            assert took_lane(ops, call)  # stream=None is no stream
        call = lambda: ops.exp(x, out=o, stream=0)  # noqa: E731
        expect_error = ValueError  # the CPU has no streams in this build
    elif case == "native_default":
        call = lambda: ops.add(x, x, out=o)  # noqa: E731 - the native kernel
    elif case == "native_forced":
        call = lambda: ops.add(x, x, out=o, implementation="native")  # noqa: E731
    elif case == "unsupported_dtype":  # a dense CPU tensor of a dtype not held
        x = torch.zeros(3, dtype=torch.float8_e5m2fnuz)
        call = lambda: ops.clone(x, out=torch.empty_like(x))  # noqa: E731
        expect_error = TypeError
    elif case == "list_of_many":  # more elements than the lane holds
        call = lambda: ops.cat([x] * 17, out=torch.empty(51))  # noqa: E731
    elif case == "list_element":  # one element is not a plain tensor
        y = torch.randn(3, requires_grad=True)
        call = lambda: ops.cat([x, y], out=torch.empty(6))  # noqa: E731
        expect_error = RuntimeError
    elif case == "optional_list":  # Tensor?[] lists never take the lane
        call = lambda: ops.index(
            x, [torch.tensor([0, 2])], out=torch.empty(2)
        )  # noqa: E731
    with threads(1):
        before = ops._debug_lane_calls()
        if expect_error is not None:
            with pytest.raises(expect_error):
                call()
        else:
            call()
        assert ops._debug_lane_calls() == before


def test_a_list_on_the_lane(ops):
    a, b = torch.randn(2, 3), torch.randn(4, 3)
    out = torch.empty(6, 3)
    with threads(1):
        assert took_lane(ops, lambda: ops.cat([a, b], out=out))
        assert took_lane(ops, lambda: ops.cat((a, b), 0, out=out))
        with pytest.raises(ValueError):  # what torch.cat raises for it
            ops.cat([], out=out)
        with pytest.raises(TypeError):
            ops.cat([a, "b"], out=out)
    torch.testing.assert_close(out, torch.cat([a, b]))


def test_argument_errors_are_the_general_paths(ops):
    """A bad argument besides the tensors raises what the general path
    raises for it (the lane converts it with the same converter)."""
    x, o = torch.randn(3), torch.empty(3)
    errors = []
    for lane in (True, False):
        ops.set_lane(lane)
        try:
            with threads(1), pytest.raises(TypeError) as e:
                ops.add(x, x, alpha="two", out=o, implementation="torch")
            errors.append(str(e.value))
            with threads(1), pytest.raises(ValueError) as e:
                ops.abs(x, out=o, implementation="bogus")
            errors.append(str(e.value))
        finally:
            ops.set_lane(True)
    assert errors[:2] == errors[2:]
    assert "alpha" in errors[0] and "implementation" in errors[1]


def test_a_warning_on_the_lane_is_a_python_warning(ops):
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    out = torch.empty(5)  # mse_loss(reduction='none') resizes it, and warns
    with threads(1), pytest.warns(UserWarning, match="was resized"):
        assert took_lane(ops, lambda: ops.mse_loss(a, b, 0, out=out))
    assert out.shape == (3, 4)


def test_the_lane_keeps_the_gil_and_other_threads_run_between_calls(ops):
    """Lane calls hold the GIL for their (small) duration only: a second
    Python thread makes progress while the first loops over calls."""
    x, o = torch.randn(8), torch.empty(8)
    progress = []
    stop = threading.Event()

    def other():
        while not stop.is_set():
            progress.append(1)

    t = threading.Thread(target=other)
    with threads(1):
        t.start()
        try:
            for _ in range(20000):
                ops.exp(x, out=o)
        finally:
            stop.set()
            t.join()
    assert progress
    torch.testing.assert_close(o, x.exp())
