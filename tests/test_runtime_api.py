"""The Python API of the built module: argument errors, exception types as
PyTorch raises them, the GIL, and importing before or after torch."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import warnings

import pytest
import torch

from runtime_conftest_helpers import REPO, build_dir, handle_reuse, subprocess_env


def _raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e
    raise AssertionError("no exception was raised")


# --- Argument errors ------------------------------------------------------------


def test_non_tensor_argument_names_op_and_parameter(ops):
    b, out = torch.randn(2), torch.empty(2)
    with pytest.raises(TypeError) as info:
        ops.add([1.0, 2.0], b, out=out)
    message = str(info.value)
    assert "add" in message and "'input'" in message and "list" in message
    # (add takes a number for `other`, as torch.add does; maximum does not)
    with pytest.raises(TypeError, match=r"'other'"):
        ops.maximum(b, 3.0, out=out)
    # torch.mm has two signatures: its message lists them (so does ours)
    with pytest.raises(
        TypeError, match=r"mm\(\) received an invalid combination.*NoneType"
    ):
        ops.mm(torch.randn(2, 2), None, out=torch.empty(2, 2))
    # a one-signature function names the parameter
    with pytest.raises(TypeError, match=r"mv\(\): argument 'vec'"):
        ops.mv(torch.randn(2, 2), None, out=torch.empty(2))


def test_non_tensor_in_tensor_list(ops):
    with pytest.raises(TypeError, match=r"cat\(\)") as raised:
        ops.cat([torch.randn(2), "x"], out=torch.empty(4))
    # One Python signature: the message names the parameter; where torch has
    # several (2.11 and 2.12 add cat(TensorList, Dimname)), it lists them.
    several = _several_signatures(ops, "cat")
    said = "received an invalid combination" if several else "argument 'tensors'"
    assert said in str(raised.value)


def _several_signatures(ops, name: str) -> bool:
    from infiniops_codegen.model import manifest as manifest_reader

    manifest = manifest_reader.of_build(ops.__file__.rsplit("/", 1)[0])
    return len(manifest.functions[name]) > 1


def test_missing_out_raises_type_error(ops):
    x = torch.randn(3)
    # index has no functional twin taking its arguments: out= is required
    with pytest.raises(TypeError, match="out"):
        ops.index(x, [torch.tensor([0])])
    with pytest.raises(TypeError, match="indices"):
        ops.topk(x, 1, values=torch.empty(1))


def test_missing_positional_raises_type_error(ops):
    with pytest.raises(TypeError, match="other"):
        ops.add(torch.randn(3), out=torch.empty(3))


def test_too_many_positional_arguments(ops):
    x = torch.randn(3)
    # alpha and out are keyword-only in ATen's schema.
    with pytest.raises(TypeError, match="positional"):
        ops.add(x, x, 1, torch.empty(3))


def test_unknown_keyword(ops):
    x = torch.randn(3)
    with pytest.raises(TypeError, match="bogus"):
        ops.add(x, x, out=torch.empty(3), bogus=1)
    # `self` is called `input`.
    with pytest.raises(TypeError, match="self"):
        ops.abs(self=x, out=torch.empty(3))


def test_argument_given_twice(ops):
    x = torch.randn(3)
    with pytest.raises(TypeError, match="input"):
        ops.add(x, x, input=x, out=torch.empty(3))


def test_keyword_arguments_by_aten_names(ops):
    x, y = torch.randn(3), torch.randn(3)
    out = torch.empty(3)
    assert ops.add(input=x, other=y, alpha=2, out=out) is out
    assert torch.equal(out, torch.add(x, y, alpha=2))


def test_bool_is_not_an_int(ops):
    x = torch.randn(2, 3)
    with pytest.raises(TypeError, match="dim"):
        ops.softmax(x, True, out=torch.empty(2, 3))


# --- Exception types as PyTorch raises them ---------------------------------------


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_shape_mismatch_same_type_as_torch(ops, implementation):
    a, b = torch.randn(3), torch.randn(4)
    ours = _raised(
        lambda: ops.add(a, b, out=torch.empty(3), implementation=implementation)
    )
    theirs = _raised(lambda: torch.add(a, b, out=torch.empty(3)))
    assert type(ours) is type(theirs)
    assert str(ours) == str(theirs)


def test_dim_out_of_range_same_type_as_torch(ops):
    x = torch.randn(3, 4)
    ours = _raised(lambda: ops.sum(x, 5, out=torch.empty(3)))
    theirs = _raised(lambda: torch.sum(x, 5, out=torch.empty(3)))
    assert type(theirs) is IndexError
    assert type(ours) is type(theirs)
    ours = _raised(lambda: ops.softmax(x, -3, out=torch.empty(3, 4)))
    theirs = _raised(lambda: torch.softmax(x, -3, out=torch.empty(3, 4)))
    assert type(ours) is type(theirs) is IndexError


def test_dtype_mismatch_same_type_as_torch(ops):
    a = torch.randn(3)
    out = torch.empty(3, dtype=torch.int64)
    ours = _raised(lambda: ops.exp(a, out=out))
    theirs = _raised(lambda: torch.exp(a, out=out))
    assert type(ours) is type(theirs)


def test_unsupported_dtype_is_type_error(ops):
    x = torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.qint8)
    with pytest.raises(TypeError, match="input"):
        ops.abs(x, out=torch.empty(3))


@pytest.mark.parametrize(
    "dim", [(0, 1), [0, 1], [], (-1, 0)], ids=["tuple2", "list2", "empty", "neg"]
)
def test_int_list_of_any_length_accepted_like_torch(ops, dim):
    """`int[1] dim` in a schema only means a bare int is accepted too; like
    torch, a list of any length must be accepted."""
    x = torch.randn(3, 4)
    for name in ("sum", "mean", "amax"):
        want = getattr(torch, name)(x, dim)
        out = torch.empty(want.shape)
        getattr(ops, name)(x, dim, out=out)
        torch.testing.assert_close(out, want, msg=f"{name}({dim})")


def test_c10_warnings_become_python_warnings_like_torch(ops):
    """Resizing a non-empty out of the wrong shape makes PyTorch warn; the
    module should raise the same Python UserWarning (so filters and
    `-W error` apply), not print to stderr."""
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.add(a, b, out=torch.empty(5))
    assert any("resized" in str(w.message) for w in theirs)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        ops.add(a, b, out=torch.empty(5), implementation="torch")
    assert [w.category for w in ours] == [w.category for w in theirs]


# --- The GIL ------------------------------------------------------------------------


def _long_mm(target: float):
    # one call takes ~0.5 s here, far above any target the test asks for
    n = 2048
    a = torch.randn(n, n, dtype=torch.float64)
    b = torch.randn(n, n, dtype=torch.float64)
    out = torch.empty(n, n, dtype=torch.float64)
    return (lambda m: m.mm(a, b, out=out)), (
        lambda: torch.testing.assert_close(out, a @ b)
    )


def _long_sin(target: float):
    # sin is a borrowing op (direct TensorIterator kernel): small calls keep
    # the GIL, large ones must release it after taking real references. The
    # size doubles until one call lasts `target` seconds, whatever this
    # machine's speed.
    n = 2**23
    while True:
        x = torch.randn(n, dtype=torch.float64)
        out = torch.empty_like(x)
        torch.sin(x, out=out)  # the first write faults the pages in: not timed
        start = time.perf_counter()
        torch.sin(x, out=out)
        if time.perf_counter() - start >= target or n >= 2**27:
            break
        n *= 2
    return (lambda m: m.sin(x, out=out)), (
        lambda: torch.testing.assert_close(out, x.sin())
    )


@pytest.mark.parametrize("make", [_long_mm, _long_sin], ids=["mm", "sin-borrowing"])
def test_gil_is_released_while_an_op_runs(ops, make):
    """A thread runs a long op; if the GIL were held, the main thread could
    not run a single bytecode during it, so the longest pause between two
    main-loop iterations would be at least one call. With the GIL released
    it stays far below (only OS scheduling noise)."""
    # A call sized on a busy machine can run faster once it is idle: then
    # again, sized for twice as long.
    for target in (0.1, 0.2, 0.4):
        call, check = make(target)
        spans, stamps, pauses = _calls_beside_a_loop(ops, call)
        shortest = min(end - start for start, end in spans)
        if shortest > 0.05:
            break
    # Iterations the main thread made while a call was running.
    inside = 0
    for start, end in spans:
        within = [c for t, c in stamps if start <= t <= end]
        if within:
            inside += within[-1] - within[0]
    assert shortest > 0.05, f"call too fast to tell ({shortest:.3f} s)"
    # A held GIL stalls the loop through every call; a busy machine (CI runs
    # another lane beside the suite) stalls it now and then: so the call
    # whose longest stall is the shortest must show the loop running.
    # (a pause's part inside a call: a held GIL is taken back only after
    # the call has returned)
    stalls = [
        max(
            (min(end, stop) - max(end - gap, start) for end, gap in pauses),
            default=0.0,
        )
        for start, stop in spans
    ]
    assert min(stalls) < shortest / 2, (
        f"main thread stalled {min(stalls):.3f} s in the best of three "
        f"{shortest:.3f} s calls: the GIL is held while the op runs"
    )
    # And through the calls the loop ran at a good part of its own pace (a
    # held GIL: next to nothing), measured against its rate over the whole
    # run, so a machine slowed by another job moves both alike.
    rate = stamps[-1][1] / (stamps[-1][0] - spans[0][0])
    during = sum(end - start for start, end in spans)
    assert inside > 0.1 * rate * during, (
        f"only {inside} main-loop iterations during {during:.3f} s of calls "
        f"(the loop's pace: {rate:.0f} per second)"
    )
    check()


def _calls_beside_a_loop(ops, call):
    """Three calls in a thread while the main thread loops: the calls' spans,
    (time, iterations) every 1024 iterations, and the loop's pauses over
    1 ms as (time it ended, length)."""
    spans: list[tuple[float, float]] = []
    started = threading.Event()

    def worker():
        started.set()
        for _ in range(3):
            t0 = time.perf_counter()
            call(ops)
            spans.append((t0, time.perf_counter()))

    thread = threading.Thread(target=worker)
    stamps = []  # (time, iterations) every 1024 iterations
    count = 0
    thread.start()
    started.wait()
    last = time.perf_counter()
    pauses: list[tuple[float, float]] = []
    while thread.is_alive():
        now = time.perf_counter()
        if now - last > 0.001:
            pauses.append((now, now - last))
        last = now
        count += 1
        if count & 1023 == 0:
            stamps.append((now, count))
    thread.join()
    assert len(spans) == 3
    return spans, stamps, pauses


# --- Importing before or after torch -----------------------------------------------

_CHECK = (
    "x = torch.tensor([-1.0, 2.0, -3.0]); out = torch.empty(3)\n"
    "assert m.abs(x, out=out) is out and out.tolist() == [1.0, 2.0, 3.0]\n"
    "print('ok', len(m.implementations()))\n"
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "code",
    [
        # load() before `import torch` (the loader itself must not need torch)
        f"import sys\n"
        f"from infiniops_codegen.runtime import load\n"
        f"assert 'torch' not in sys.modules, 'the loader imported torch'\n"
        f"m = load({str(build_dir())!r})\n"
        f"import torch\n" + _CHECK,
        # torch first
        f"import torch\n"
        f"from infiniops_codegen.runtime import load\n"
        f"m = load({str(build_dir())!r})\n" + _CHECK,
        # the PYTHONPATH route, module first
        f"import sys; sys.path.insert(0, {str(build_dir())!r})\n"
        f"import infiniops as m\n"
        f"import torch\n" + _CHECK,
    ],
    ids=["load_then_torch", "torch_then_load", "import_then_torch"],
)
def test_import_order(ops, code):
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok "), proc.stdout
    assert int(proc.stdout.split()[1]) == len(ops.implementations())


def test_loading_twice_returns_the_same_module(ops):
    from infiniops_codegen.runtime import load

    assert load(build_dir()) is ops
    assert ops.__torch_version__ == torch.__version__


def test_the_build_records_the_torch_it_is_built_against(ops):
    """What the loader compares with the installed torch before it loads the
    module (tests/test_torch_releases.py: the refusal)."""
    from infiniops_codegen.base import torch_build
    from infiniops_codegen.base.locations import TORCH_RECORD

    built = torch_build.read_record(build_dir() / TORCH_RECORD)
    assert built == torch_build.TorchBuild(
        str(torch.__version__), torch.version.cuda, torch.version.hip
    )
    assert built == torch_build.installed()  # read without the torch module too
    assert (build_dir() / "infiniops" / "__init__.py").is_file()  # import infiniops


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_out_with_autograd_input_same_as_torch(ops, implementation):
    """PyTorch refuses out= when an input requires grad; the op must not
    depend on which implementation dispatch picked (add float32 default is
    the native kernel)."""
    x = torch.randn(3, requires_grad=True)
    theirs = _raised(lambda: torch.add(x, x, out=torch.empty(3)))
    out = torch.empty(3)
    ours = _raised(lambda: ops.add(x, x, out=out, implementation=implementation))
    assert type(ours) is type(theirs)


_GRAD_CASES = {
    # op: (ours, PyTorch's); PyTorch refuses only differentiable out= overloads
    "eq": (
        lambda m, x, y: m.eq_Tensor(x, y, out=torch.empty(3, dtype=torch.bool)),
        lambda x, y: torch.eq(x, y, out=torch.empty(3, dtype=torch.bool)),
    ),
    "argmax": (
        lambda m, x, y: m.argmax(x, out=torch.empty((), dtype=torch.long)),
        lambda x, y: torch.argmax(x, out=torch.empty((), dtype=torch.long)),
    ),
    "softmax": (
        lambda m, x, y: m.softmax(x, 0, out=torch.empty(3)),
        lambda x, y: torch.softmax(x, 0, out=torch.empty(3)),
    ),
    "exp": (
        lambda m, x, y: m.exp(x, out=torch.empty(3)),
        lambda x, y: torch.exp(x, out=torch.empty(3)),
    ),
    "sub": (
        lambda m, x, y: m.sub(x, y, out=torch.empty(3)),
        lambda x, y: torch.sub(x, y, out=torch.empty(3)),
    ),
    "mm": (
        lambda m, x, y: m.mm(x.view(1, 3), y.view(3, 1), out=torch.empty(1, 1)),
        lambda x, y: torch.mm(x.view(1, 3), y.view(3, 1), out=torch.empty(1, 1)),
    ),
}


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "dispatcher"])
@pytest.mark.parametrize("name", sorted(_GRAD_CASES))
def test_requires_grad_input_refused_only_where_torch_refuses(ops, name, direct):
    """ATen's autograd kernel decides, as for PyTorch's own call: eq, argmax
    and softmax take such inputs, differentiable ops raise RuntimeError."""
    ours, theirs = _GRAD_CASES[name]
    x, y = torch.randn(3, requires_grad=True), torch.randn(3)

    def outcome(call):
        try:
            return type(call())
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e)

    previous = ops.direct_mode()
    ops.set_direct_mode(direct)
    try:
        got = outcome(lambda: ours(ops, x, y))
    finally:
        ops.set_direct_mode(previous)
    assert got is outcome(lambda: theirs(x, y))


def test_requires_grad_goes_to_atens_autograd_kernel_on_every_path(ops):
    """A tensor that requires grad always reaches ATen's dispatcher with its
    original at::Tensor (never a native kernel or a from_blob copy), so ATen's
    autograd kernel decides exactly as for torch's call: eq's output is not
    differentiable (accepted), add's is (refused). Composites have no
    autograd kernel and refuse, as PyTorch's out= functions do."""
    x = torch.randn(2, 4, requires_grad=True)
    for reuse in (True, False):
        with handle_reuse(ops, reuse):
            out = torch.empty(2, 4, dtype=torch.bool)
            ops.eq_Tensor(x, x, out=out)
            assert torch.equal(out, torch.eq(x, x, out=torch.empty_like(out)))
            for impl in ("default", "torch"):
                with pytest.raises(RuntimeError, match="automatic differentiation"):
                    ops.add(x, x, out=torch.empty(2, 4), implementation=impl)
            with pytest.raises(NotImplementedError, match="requires grad"):
                ops.add(x, x, out=torch.empty(2, 4), implementation="native")
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        ops.silu_and_mul(x, out=torch.empty(2, 2))


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (
            lambda m, x: m.softmax(x, 2**70, out=torch.empty(2, 3)),
            lambda x: torch.softmax(x, 2**70, out=torch.empty(2, 3)),
        ),
        (
            lambda m, x: m.add(x, x, alpha=2**70, out=torch.empty(2, 3)),
            lambda x: torch.add(x, x, alpha=2**70, out=torch.empty(2, 3)),
        ),
    ],
    ids=["int", "scalar"],
)
def test_integer_overflow_same_type_as_torch(ops, ours, theirs):
    x = torch.randn(2, 3)
    assert type(_raised(lambda: ours(ops, x))) is type(_raised(lambda: theirs(x)))


def test_concurrent_calls_from_threads(ops):
    """The GIL is released inside ops: calls from several threads at once must
    each compute their own result (no shared per-call state)."""
    errors: list[str] = []

    def work(k: int):
        a = torch.full((512,), float(k))
        b = torch.arange(512, dtype=torch.float32)
        out = torch.empty(512)
        mm_out = torch.empty(8, 8)
        for i in range(500):
            impl = ("default", "torch")[i % 2]
            ops.add(a, b, out=out, implementation=impl)
            if not torch.equal(out, a + b):
                errors.append(f"thread {k} call {i} ({impl})")
            ops.mm(a[:64].view(8, 8), b[:64].view(8, 8), out=mm_out)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --- Devices, layouts and ranks -----------------------------------------------------


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_mismatched_devices_same_type_as_torch(ops, implementation):
    """A tensor on another device (meta: the only other one of the CPU
    wheel) raises PyTorch's RuntimeError, with PyTorch's message."""
    x, m = torch.randn(3), torch.empty(3, device="meta")
    cases = [
        (lambda: torch.add(x, m, out=torch.empty(3)), "add", "other"),
        (lambda: torch.abs(x, out=m), "abs", "out"),
        (
            lambda: torch.mm(m.view(3, 1), x.view(1, 3), out=torch.empty(3, 3)),
            "mm",
            "input",
        ),
    ]
    ours = [
        lambda: ops.add(x, m, out=torch.empty(3), implementation=implementation),
        lambda: ops.abs(x, out=m, implementation=implementation),
        lambda: ops.mm(
            m.view(3, 1),
            x.view(1, 3),
            out=torch.empty(3, 3),
            implementation=implementation,
        ),
    ]
    for (theirs, op, arg), call in zip(cases, ours):
        # A meta tensor reaches ATen as it is: ATen raises its own error.
        error, expected = _raised(call), _raised(theirs)
        assert type(error) is type(expected) is RuntimeError
        assert str(error) == str(expected), op


def test_other_layouts_reach_aten_as_they_are(ops):
    """Nested and sparse tensors go to ATen's dispatcher untouched: what
    ATen supports works (sparse abs), the rest raises PyTorch's error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are a prototype"
        nested = torch.nested.nested_tensor([torch.randn(3), torch.randn(3)])
    error = _raised(lambda: ops.abs(nested, out=torch.empty(2, 3)))
    expected = _raised(lambda: torch.abs(nested, out=torch.empty(2, 3)))
    assert type(error) is type(expected) is NotImplementedError
    sparse = torch.randn(3, 3).to_sparse()
    out = torch.empty(3, 3).to_sparse()
    ops.abs(sparse, out=out)
    assert torch.equal(out.to_dense(), sparse.to_dense().abs())


@pytest.mark.parametrize("implementation", ["default", "torch"])
def test_many_dimensions_have_no_limit(ops, implementation):
    """The core keeps up to 8 dims inline and spills the rest to the heap:
    no rank limit of its own (PyTorch's is 64 for some kernels)."""
    shape = [1] * 37 + [2, 3]
    a, b = torch.randn(shape), torch.randn(shape[-2:])
    for reuse in (True, False):
        from runtime_conftest_helpers import handle_reuse

        with handle_reuse(ops, reuse):
            out = torch.empty(shape)
            ops.add(a, b, alpha=3, out=out, implementation=implementation)
            torch.testing.assert_close(out, torch.add(a, b, alpha=3))
            summed = torch.empty([1] * 37 + [2])
            ops.sum(a, [-1], out=summed, implementation=implementation)
            torch.testing.assert_close(summed, a.sum(-1))


def test_none_for_an_int_list_defaulting_to_empty_like_torch(ops):
    """PyTorch's parser takes None for an int list whose default is [] (the
    default) and refuses it elsewhere (TypeError)."""
    x = torch.randn(3, 4)
    out = torch.empty(())
    ops.amax(x, None, out=out)
    assert torch.equal(out, torch.amax(x, None))
    # torch 2.11 and 2.12 take None as a Dimname there (RuntimeError: named
    # tensors); ours then names cumsum.dimname_out, not in the build
    # (NotImplementedError, a RuntimeError). 2.13 refuses it (TypeError).
    torch_error = _raised(lambda: torch.cumsum(x, None, out=torch.empty(3, 4)))
    ours = _raised(lambda: ops.cumsum(x, None, out=torch.empty(3, 4)))
    if type(torch_error) is TypeError:
        assert type(ours) is TypeError
        assert "cumsum(): argument 'dim' must be int" in str(ours)
    else:
        assert type(torch_error) is RuntimeError, torch_error
        assert isinstance(ours, RuntimeError) and "cumsum.dimname_out" in str(ours)
        assert "no build can serve it: dimension names" in str(ours)
    with pytest.raises(TypeError, match=r"flip\(\): argument 'dims'"):
        ops.flip(x, None, out=torch.empty(3, 4))
    assert type(_raised(lambda: torch.flip(x, None))) is TypeError


@pytest.mark.parametrize(
    "value, kind, text",
    [
        ("cuda", ValueError, "must be 'default', 'native' or 'torch', got 'cuda'"),
        ("Torch", ValueError, "got 'Torch'"),
        (1, TypeError, "argument 'implementation' must be str, not int"),
    ],
)
def test_unknown_implementation_names_op_and_value(ops, value, kind, text):
    x = torch.randn(3)
    with pytest.raises(kind, match=r"^add\(\): .*" + text.replace("(", r"\(")):
        ops.add(x, x, out=torch.empty(3), implementation=value)
