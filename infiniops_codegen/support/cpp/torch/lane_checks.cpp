// The lane's checks of a call's tensors (lane_checks.h) and its switches
// (torch/lane.h).
#include "torch/lane_checks.h"

#include <torch/csrc/autograd/python_variable.h>

#include <bit>

#include "core/observe.h"
#include "torch/aten/handles.h"
#include "torch/call.h"
#include "torch/tensor_paths.h"

namespace infini::ops::torch_bridge {

std::atomic<bool> g_lane{true};
uint64_t g_lane_calls = 0;

namespace {

// One tensor of a lane call: its TensorImpl, or null when it is not a
// lane tensor; adds its elements.
void* lane_item(PyObject* obj, int64_t& elements) noexcept {
  if (Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(THPVariableClass)) return nullptr;
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (!lane_tensor(t)) return nullptr;
  elements += t.unsafeGetTensorImpl()->numel();
  return t.unsafeGetTensorImpl();
}

}  // namespace

bool lane_tensors(const Signature& sig, PyObject* const* slots, void** refs,
                  TensorListRef* lists, void** items) noexcept {
  if (!g_lane.load(std::memory_order_relaxed) ||
      !g_handle_reuse.load(std::memory_order_relaxed)) {
    return false;
  }
  int64_t elements = 0;
  int k = 0;
  for (uint64_t bits = sig.tensor_params; bits != 0; bits &= bits - 1) {
    const int i = std::countr_zero(bits);
    PyObject* obj = slots[i];
    if (obj == nullptr || obj == Py_None) {
      if (((sig.optional_tensor_params >> i) & 1) == 0) return false;
      refs[k++] = nullptr;
      continue;
    }
    refs[k] = lane_item(obj, elements);
    if (refs[k++] == nullptr) return false;
  }
  std::size_t used = 0;
  int j = 0;
  for (uint64_t bits = sig.tensor_list_params; bits != 0; bits &= bits - 1) {
    PyObject* obj = slots[std::countr_zero(bits)];
    if (obj == nullptr || !(PyList_CheckExact(obj) || PyTuple_CheckExact(obj))) return false;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    if (static_cast<std::size_t>(n) > kLaneListItems - used) return false;
    PyObject** elements_of = PySequence_Fast_ITEMS(obj);
    lists[j++] = {items + used, static_cast<std::size_t>(n)};
    for (Py_ssize_t e = 0; e < n; ++e) {
      items[used] = lane_item(elements_of[e], elements);
      if (items[used++] == nullptr) return false;
    }
  }
  // The lane keeps the GIL with borrowed tensors (lane.h, call.h).
  if (elements >= kKeepGilBelowElements || !may_borrow(sig)) return false;
  ++g_lane_calls;
  observe::note(observe::Route::kLane);
  return true;
}

}  // namespace infini::ops::torch_bridge
