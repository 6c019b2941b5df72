#pragma once
// Calls without out= (Signature::out_optional) on the Python side: the
// tensors handed to ATen as they arrived, and the outputs made for the call
// returned as Python tensors. Only Python.h and the core: the bindings TU
// stays free of torch's headers; the definitions are in functional_call.cpp.

#include "core/core.h"
#include "torch/lane.h"
#include "torch/signature.h"
#include "torch/small_list.h"

namespace infini::ops::torch_bridge {

// Calls without out= (Signature::out_optional). The tensors of such a call
// go to ATen as they arrived, whatever they are (subclasses, tensors that
// require grad, meta or fake tensors, ...): ATen's functional overload, or
// the op once its outputs are allocated, sees them as torch's own call
// would. CallTensors fills refs (one per tensor parameter but the outputs,
// null for None) and lists (one per tensor-list parameter), raising the
// converters' TypeError for a value that is not a tensor. It borrows the
// TensorImpls where the call keeps the GIL (a small CPU call, as the lane);
// otherwise it holds a reference to each while the GIL is released.
class CallTensors {
 public:
  CallTensors(const Signature& sig, PyObject* const* slots, void** refs,
              TensorListRef* lists = nullptr);
  ~CallTensors();
  CallTensors(const CallTensors&) = delete;
  CallTensors& operator=(const CallTensors&) = delete;
  bool release_gil() const noexcept { return release_gil_; }

 private:
  SmallList<void*, kLaneListItems> items_;  // list elements
  SmallList<void*, 8> owned_;               // references held
  bool release_gil_ = false;
};

// The outputs made by a call without out=, returned: one tensor, or
// several as torch.return_types.<Signature::functional_return_type>.
PyObject* return_results(const Signature& sig, Results& results);

// Outputs allocated for a call without out=, as Python tensors standing in
// the call's out= parameters (filled: a copy of the call's slots).
class NewOutputs {
 public:
  NewOutputs() = default;
  ~NewOutputs();
  NewOutputs(const NewOutputs&) = delete;
  NewOutputs& operator=(const NewOutputs&) = delete;
  // False with a Python error set when wrapping failed.
  bool fill(const Signature& sig, Results& results, PyObject** filled);
  // The op's out= result on these outputs as a call without out= returns
  // it: each output's version back at 0 (a fresh tensor's, as torch's own
  // call returns it), several outputs as torch.return_types.
  // <functional_return_type> instead of <return_type>. Steals result.
  // With none filled (a call that gave out=): result as it is.
  PyObject* returned(const Signature& sig, PyObject* result) {
    return count_ == 0 ? result : returned_filled(sig, result);
  }

 private:
  PyObject* returned_filled(const Signature& sig, PyObject* result);
  PyObject* objects_[Results::kMax];  // the first count_ are set
  int count_ = 0;
};

}  // namespace infini::ops::torch_bridge
