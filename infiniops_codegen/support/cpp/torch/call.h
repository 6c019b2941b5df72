#pragma once
// The skeleton every generated binding shares: parse the vectorcall, hand
// it to __torch_function__ when an argument or mode wants it, convert the
// arguments and call the library (bind), with c10 warnings collected and the
// GIL released around the library call (run), and C++ exceptions translated
// into the Python exception PyTorch raises. Free of torch's headers: the
// bindings TU compiles fast; definitions needing them are in call.cpp.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "core/core.h"
#include "torch/python_errors.h"
#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// Releases the GIL while the kernel runs, as PyTorch does (unless told not to).
class GilRelease {
 public:
  GilRelease() noexcept : state_(PyEval_SaveThread()) {}
  explicit GilRelease(bool release) noexcept
      : state_(release ? PyEval_SaveThread() : nullptr) {}
  ~GilRelease() {
    if (state_ != nullptr) PyEval_RestoreThread(state_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

// Whether to release the GIL for a call of the general path. A small CPU
// call keeps it: dropping and retaking the GIL costs more than its kernel,
// and a kernel that copies a borrowed at::Tensor makes torch incref the
// Python object, which is cheap with the GIL held and a full GIL round trip
// without. Keeping it is safe: below ATen's grain size no intra-op worker
// runs, and where one might (kernels that split work more finely), it can
// need the GIL only to copy a tensor whose reference count is one: borrowed
// handles are given to ops whose kernels' loops see raw pointers
// (Signature::borrow_tensors), or to any op at one intra-op thread (no
// worker at all); every other handle owns a reference.
// Any other call (a large one, or one with a tensor off the CPU, whose
// device may make the call wait) releases it, as PyTorch does, after its
// borrowed handles took real references (the Python objects stay alive
// anyway; this keeps the refcount above one, so copies never need the GIL).
inline constexpr int64_t kKeepGilBelowElements = 32768;  // ATen's grain size

// (elements, whether every tensor is on the CPU) of one argument.
inline void tally(const Tensor& t, int64_t& elements, bool& cpu) noexcept {
  elements += t.numel();
  cpu = cpu && t.device().type == DeviceType::kCpu;
}
inline void tally(const std::optional<Tensor>& t, int64_t& elements, bool& cpu) noexcept {
  if (t) tally(*t, elements, cpu);
}
template <class List>
  requires requires(const List& l) { l.items.size(); }
inline void tally(const List& list, int64_t& elements, bool& cpu) noexcept {
  for (const auto& t : list.items) tally(t, elements, cpu);
}

// Out of line (call.cpp): a Tensor's copy and assignment, inlined into each
// binding's instantiation, were a tenth of the bindings TU's code.
void own_handle(Tensor& t);
inline void own_handle(std::optional<Tensor>& t) {
  if (t) own_handle(*t);
}
template <class List>
inline void own_handle(List&) noexcept {}  // list elements always own

template <class... T>
bool release_gil_for(T&... tensors) {
  int64_t elements = 0;
  bool cpu = true;
  (tally(tensors, elements, cpu), ...);
  if (cpu && elements < kKeepGilBelowElements) return false;
  (own_handle(tensors), ...);
  return true;
}

// c10 warnings raised during a call become Python warnings (as in PyTorch)
// when the scope ends, with the GIL held. Opaque storage for
// torch::PyWarningHandler keeps torch headers out of the bindings TU.
class WarningScope {
 public:
  WarningScope() noexcept;
  ~WarningScope() noexcept(false);
  WarningScope(const WarningScope&) = delete;
  WarningScope& operator=(const WarningScope&) = delete;
  // Call inside the catch handler when an exception leaves the scope (the
  // destructor must then not throw). Drops warnings the exception makes
  // false: ATen's "was resized" warning for an output the from_blob path
  // could not resize.
  void set_in_exception() noexcept;

 private:
  alignas(16) unsigned char storage_[64];
};

inline PyObject* new_reference(PyObject* obj) {
  Py_INCREF(obj);
  return obj;
}

// torch.return_types.<name>, looked up once into *cache (GIL held); null
// with a Python error when torch has none.
PyTypeObject* return_type(const char* name, PyObject** cache);

// The outputs of a several-output op, as torch's out= call returns them:
// torch.return_types.<sig.return_type> (its field names) where torch has
// one, else a plain tuple. Null with a Python error on failure.
PyObject* pack_outputs(const Signature& sig, std::initializer_list<PyObject*> outputs);

// A binding's own part: converts the parsed parameters (slots, in the op's
// parameter order: positional, keyword-only, implementation, stream; then
// out= given as one sequence, see parse_args), calls run() and returns the
// result.
using Body = PyObject* (*)(PyObject** slots);

// out= of a several-output op given as one list, taken again once every
// other argument is converted: the list as it is then (a conversion hook may
// have changed it; PyTorch reads it then too), each item held for the call.
// A tuple, which cannot change, stays as parse_args took it.
class OutList {
 public:
  [[gnu::always_inline]] OutList(const Signature& sig, PyObject** slots) {
    if (slots[sig.num_params] != nullptr) [[unlikely]] take(sig, slots);
  }
  ~OutList() {
    for (int k = 0; k < count_; ++k) Py_DECREF(items_[k]);
  }
  OutList(const OutList&) = delete;
  OutList& operator=(const OutList&) = delete;

 private:
  void take(const Signature& sig, PyObject** slots);
  PyObject* items_[8] = {};
  int count_ = 0;
};

// The skeleton around it, once for every binding (call.cpp): parse the
// vectorcall into slots (the binding's array, one per parameter), hand the
// call to __torch_function__ where wanted, run body, and translate a C++
// exception into the Python one.
PyObject* bind(const Signature& sig, PyObject* module, PyObject* const* args,
               Py_ssize_t nargs, PyObject* kwnames, PyObject** slots,
               Body body) noexcept;

// The library call itself: c10 warnings become Python warnings when it
// ends (with the GIL held), and the GIL is released while it runs unless
// release_gil is false (small calls of borrowing ops: release_gil_for).
template <class F>
[[gnu::always_inline]] inline void run(bool release_gil, F&& f) {
  WarningScope warnings;
  try {
    GilRelease nogil(release_gil);
    f();
  } catch (...) {
    warnings.set_in_exception();
    throw;
  }
}

}  // namespace infini::ops::torch_bridge
