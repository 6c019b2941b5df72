// Tensor arguments, Python -> core (unpack_tensors.h).
#include "torch/unpack_tensors.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>
#include <string_view>

#include "torch/aten/handles.h"
#include "torch/python_objects.h"
#include "torch/tensor_paths.h"

namespace infini::ops::torch_bridge {

namespace {

// Inside a catch handler: the same error type, naming the op and argument
// unless the message already starts with the op.
template <class E>
[[noreturn]] void rethrow_located(const E& e, const Signature& sig, int i) {
  if (std::string_view(e.what()).starts_with(sig.op)) throw;
  throw E(where(sig, i) + ": " + e.what());
}

}  // namespace

Tensor unpack_tensor(PyObject* obj, const Signature& sig, int i, bool borrow) {
  if (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(THPVariableClass)) [[likely]] {
    // The common case first, in a few instructions: a plain CPU tensor
    // (see lane_tensor) has nothing for the checks below to find.
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (lane_tensor(t)) [[likely]] {
      // Where may_borrow, every op borrows and skips the Python object's
      // incref and decref an owning handle costs.
      return borrow || may_borrow(sig) ? from_aten_borrowed(t) : from_aten(t);
    }
  }
  if (!tensor_object(obj)) wrong_type(obj, sig, i, "Tensor");
  const at::Tensor& t = THPVariable_Unpack(obj);
  const bool needs_autograd = t.requires_grad() && at::GradMode::is_enabled();
  if (!sig.aten_autograd) [[unlikely]] {
    // Composites compute through other ATen calls and write the result into
    // their outputs, which autograd cannot follow: refuse what PyTorch's own
    // out= functions refuse.
    if (needs_autograd) {
      throw Error(std::string(sig.op) +
                  "(): functions with out=... arguments don't support automatic "
                  "differentiation, but one of the arguments requires grad.");
    }
    if (is_dual(t)) {
      throw NotImplementedError(std::string(sig.op) +
                                "(): trying to use forward AD with an out= function, "
                                "which does not support it");
    }
  }
  try {
    if (needs_autograd || !plain_tensor(t)) [[unlikely]] {
      // ATen's dispatcher decides: its autograd kernel raises where PyTorch
      // does (or accepts non-differentiable outputs), modes and wrappers see
      // the call.
      return from_aten_opaque(t);
    }
    return borrow ? from_aten_borrowed(t) : from_aten(t);
  } catch (const TypeError& e) {  // an unsupported dtype
    rethrow_located(e, sig, i);
  } catch (const Error& e) {  // an unsupported device: RuntimeError
    rethrow_located(e, sig, i);
  }
}

// Tensor lists convert in the tensor phase, where no Python code runs: each
// element is read from the list once and owns its handle.
TensorListArg unpack_tensor_list(PyObject* obj, const Signature& sig, int i) {
  if (!list_or_tuple(obj)) wrong_type(obj, sig, i, "tuple of Tensors");
  const Items items(obj, false);
  TensorListArg list;
  list.items.reserve(static_cast<std::size_t>(items.size()));
  for (Py_ssize_t k = 0; k < items.size(); ++k) {
    if (!tensor_object(items[k])) {
      throw TypeError(where(sig, i) + " must be tuple of Tensors, but found element of type " +
                      type_name(items[k]) + " at pos " + std::to_string(k));
    }
    list.items.push_back(unpack_tensor(items[k], sig, i, false));
  }
  return list;
}

// Tensor?[]: None elements too (ATen's schema takes them; PyTorch's Python
// parser, which has no out= function with such a list, refuses them).
OptionalTensorListArg unpack_tensor_opt_list(PyObject* obj, const Signature& sig, int i) {
  if (!list_or_tuple(obj)) wrong_type(obj, sig, i, "tuple of Tensors");
  const Items items(obj, false);
  OptionalTensorListArg list;
  list.items.reserve(static_cast<std::size_t>(items.size()));
  for (Py_ssize_t k = 0; k < items.size(); ++k) {
    if (items[k] == Py_None) {
      list.items.emplace_back(std::nullopt);
    } else if (tensor_object(items[k])) {
      list.items.emplace_back(unpack_tensor(items[k], sig, i, false));
    } else {
      throw TypeError(where(sig, i) + " must be tuple of Tensors or None, but found element of type " +
                      type_name(items[k]) + " at pos " + std::to_string(k));
    }
  }
  return list;
}

}  // namespace infini::ops::torch_bridge
