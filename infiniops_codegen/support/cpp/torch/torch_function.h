#pragma once
// PyTorch's __torch_function__ protocol for the generated bindings: tensor
// subclasses (and any object overriding __torch_function__) in a tensor
// argument, and an active TorchFunctionMode, get the call as with torch's
// own functions. The check is inline and costs plain tensors one type
// comparison each; the protocol itself is in torch_function.cpp.

#include "torch/signature.h"

// torch.Tensor's Python type (libtorch_python), declared here to keep the
// bindings TU free of torch's Python headers.
extern PyObject* THPVariableClass;

// A TorchFunctionMode is active (ATen/PythonTorchFunctionTLS.h, libtorch_cpu;
// declared here for the same reason).
namespace at::impl {
bool torch_function_mode_enabled();
}

namespace infini::ops::torch_bridge {

// PyTorch's override protocol, as torch.<op> honours it: __torch_function__
// when an argument in a tensor parameter is not exactly a torch.Tensor (a
// subclass or any object overriding __torch_function__) or a
// TorchFunctionMode is active. Plain tensors with no mode cost a type
// comparison each and one thread-local read.
// So what a call with arguments that are not plain tensors needs: nothing
// special, __torch_function__, or the module's dispatcher op (the tensors
// carry the Python dispatch key without overriding __torch_function__:
// fake tensors of torch.export and make_fx, FunctionalTensor, wrapper
// subclasses), so that a tracer records torch.ops.<name>.<op> and a fake
// tensor meets the op's fake kernel (docs/compile.md).
// kTracedTorchFunction: __torch_function__ (a mode: torch.export's) with
// traced tensors, handed the dispatcher op rather than ATen's.
enum class Special : int { kNone = 0, kTorchFunction, kTracedTorchFunction, kDispatcherOp };
Special torch_function_slow(const Signature& sig, PyObject* const* slots);
Special torch_function_in_lists(const Signature& sig, PyObject* const* slots);
[[gnu::always_inline]] inline Special torch_function_wanted(const Signature& sig,
                                                            PyObject* const* slots) {
  for (uint64_t mask = sig.tensor_params; mask != 0; mask &= mask - 1) {
    PyObject* obj = slots[__builtin_ctzll(mask)];
    if (obj != nullptr && Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(THPVariableClass) &&
        obj != Py_None) [[unlikely]] {
      return torch_function_slow(sig, slots);
    }
  }
  if (sig.tensor_list_params != 0) {
    const Special lists = torch_function_in_lists(sig, slots);
    if (lists != Special::kNone) return lists;
  }
  if (at::impl::torch_function_mode_enabled()) return torch_function_slow(sig, slots);
  return Special::kNone;
}

// Hands the call to __torch_function__ (torch's handle_torch_function) and
// returns its result; null with a Python error set on failure.
PyObject* torch_function(const Signature& sig, PyObject* module, PyObject* const* args,
                         Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots,
                         bool traced = false);

// Calls the module's dispatcher op (torch.ops.<module>.<overload>) with the
// call's arguments under their schema names. Null with a Python error set
// on failure; NotImplemented (a new reference) where the call takes the
// module's own path instead (implementation= or stream= given, or no
// functional overload for a call without outputs).
PyObject* dispatcher_op(const Signature& sig, PyObject* module, PyObject* const* args,
                        Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots);

// Reads torch._C._disabled_torch_function_impl (the opt-out value of
// __torch_function__); once, when the module is imported.
bool init_torch_function();

}  // namespace infini::ops::torch_bridge
