// Calls without out= on the Python side (functional_call.h).
#include "torch/functional_call.h"

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/python_variable.h>

#include <bit>
#include <cstddef>

#include "torch/call.h"
#include "torch/python_objects.h"
#include "torch/tensor_paths.h"

namespace infini::ops::torch_bridge {

namespace {

c10::TensorImpl* call_item(PyObject* obj, const Signature& sig, int i, int64_t& elements,
                           bool& cpu) {
  if (!tensor_object(obj)) wrong_type(obj, sig, i, "Tensor");
  const at::Tensor& t = THPVariable_Unpack(obj);
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  // Tensors without real storage (meta, fake, functorch wrappers, ...) are
  // never read here: sizes come from the impl only when it has them.
  if (impl->device_type() != c10::DeviceType::CPU) {
    cpu = false;
  } else if (!impl->has_symbolic_sizes_strides()) {
    elements += impl->numel();
  } else {
    cpu = false;
  }
  return impl;
}

// items (new references, stolen) as one tensor, or as the functional's
// structseq (a plain tuple when it has none).
PyObject* functional_pack(const Signature& sig, PyObject** items, int n) {
  if (n == 1) return items[0];
  PyObject* result = nullptr;
  if (sig.functional_return_type != nullptr) {
    PyTypeObject* type =
        return_type(sig.functional_return_type, sig.functional_return_type_object);
    if (type != nullptr) result = PyStructSequence_New(type);
  } else {
    result = PyTuple_New(n);
  }
  if (result == nullptr) {
    for (int k = 0; k < n; ++k) Py_XDECREF(items[k]);
    return nullptr;
  }
  for (int k = 0; k < n; ++k) PyTuple_SET_ITEM(result, k, items[k]);
  return result;
}

// A new Python tensor for an impl whose reference it takes over.
PyObject* wrap_impl(void*& impl) {
  at::Tensor t(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim(
      static_cast<c10::TensorImpl*>(impl)));
  impl = nullptr;
  return THPVariable_Wrap(std::move(t));
}

}  // namespace

CallTensors::CallTensors(const Signature& sig, PyObject* const* slots, void** refs,
                         TensorListRef* lists) {
  int64_t elements = 0;
  bool cpu = true;
  int k = 0;
  for (uint64_t bits = sig.tensor_params; bits != 0; bits &= bits - 1) {
    const int i = std::countr_zero(bits);
    PyObject* obj = slots[i];
    if (obj == nullptr || obj == Py_None) {
      if (obj == nullptr && !is_output_param(sig, i) && ((sig.optional_tensor_params >> i) & 1) == 0) {
        missing(sig, i);
      }
      if (obj == Py_None && !is_output_param(sig, i) && ((sig.optional_tensor_params >> i) & 1) == 0) {
        wrong_type(obj, sig, i, "Tensor");
      }
      refs[k++] = nullptr;
      continue;
    }
    refs[k++] = call_item(obj, sig, i, elements, cpu);
  }
  // List elements first, their spans after: the storage may move as it grows.
  SmallList<std::size_t, 4> sizes;
  for (uint64_t bits = sig.tensor_list_params; bits != 0; bits &= bits - 1) {
    const int i = std::countr_zero(bits);
    PyObject* obj = slots[i];
    if (obj == nullptr) missing(sig, i);
    if (!(PyList_Check(obj) || PyTuple_Check(obj))) wrong_type(obj, sig, i, "tuple of Tensors");
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject** elements_of = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t e = 0; e < n; ++e) {
      items_.push_back(call_item(elements_of[e], sig, i, elements, cpu));
    }
    sizes.push_back(static_cast<std::size_t>(n));
  }
  std::size_t used = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    lists[j] = {items_.data() + used, sizes[j]};
    used += sizes[j];
  }
  const bool small = cpu && elements < kKeepGilBelowElements;
  if (small && may_borrow(sig)) return;  // borrowed, the GIL kept (as the lane)
  // Hold a reference to each: no copy ATen makes can then need the GIL.
  release_gil_ = !small;
  for (int r = 0; r < k; ++r) {
    if (refs[r] != nullptr) {
      c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(refs[r]));
      owned_.push_back(refs[r]);
    }
  }
  for (void* item : items_) {
    c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(item));
    owned_.push_back(item);
  }
}

CallTensors::~CallTensors() {
  for (void* impl : owned_) c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl));
}

PyObject* return_results(const Signature& sig, Results& results) {
  PyObject* items[Results::kMax] = {};
  for (int k = 0; k < results.count; ++k) {
    items[k] = wrap_impl(results.impls[k]);
    if (items[k] == nullptr) {
      for (int j = 0; j < k; ++j) Py_DECREF(items[j]);
      return nullptr;
    }
  }
  return functional_pack(sig, items, results.count);
}

NewOutputs::~NewOutputs() {
  for (int k = 0; k < count_; ++k) Py_XDECREF(objects_[k]);
}

bool NewOutputs::fill(const Signature& sig, Results& results, PyObject** filled) {
  if (results.count != sig.num_outs) {
    PyErr_Format(PyExc_RuntimeError, "%s(): %d outputs allocated for %d", sig.op, results.count,
                 sig.num_outs);
    return false;
  }
  for (int j = 0; j < sig.num_outs; ++j) {
    objects_[count_] = wrap_impl(results.impls[j]);
    if (objects_[count_] == nullptr) return false;
    filled[sig.out_params[j]] = objects_[count_++];
  }
  return true;
}

PyObject* NewOutputs::returned_filled(const Signature& sig, PyObject* result) {
  if (result == nullptr) return nullptr;
  for (int k = 0; k < count_; ++k) {
    // Written once by the op, seen by nobody else yet: no saved tensor or
    // view can hold the counter that is replaced.
    c10::TensorImpl* impl = THPVariable_Unpack(objects_[k]).unsafeGetTensorImpl();
    if (!impl->is_inference()) {  // inference tensors have no counter
      impl->set_version_counter(c10::VariableVersion(/*version=*/0));
    }
  }
  if (sig.num_outs < 2) return result;
  PyObject* items[Results::kMax] = {};
  for (int k = 0; k < sig.num_outs; ++k) {
    items[k] = PyTuple_GET_ITEM(result, k);
    Py_INCREF(items[k]);
  }
  Py_DECREF(result);
  return functional_pack(sig, items, sig.num_outs);
}

}  // namespace infini::ops::torch_bridge
