"""A C++ copy of a core Tensor owns its source handle: the framework tensor
(and its data) outlives every Python reference, and is released with the
last copy."""

import gc

import torch


def test_cpp_copy_keeps_data_alive_after_python_drops_it(ops):
    t = torch.arange(10.0)
    expected = t.clone()
    index = ops._debug_keep(t)
    assert t._use_count() == 2  # Python's reference + the C++ copy's handle
    del t
    gc.collect()
    churn = [torch.full((10,), -1.0) for _ in range(100)]  # reuse freed memory
    back = ops._debug_kept(index)
    assert torch.equal(back, expected)
    assert back._use_count() == 2  # the same TensorImpl, not a copy
    ops._debug_release()
    assert back._use_count() == 1  # the handle's reference was released
    del churn


def test_kept_tensor_is_the_same_storage(ops):
    t = torch.zeros(4)
    index = ops._debug_keep(t)
    back = ops._debug_kept(index)
    back[0] = 7.0
    assert t[0].item() == 7.0
    assert back.data_ptr() == t.data_ptr()
    ops._debug_release()
    assert t._use_count() == 1
