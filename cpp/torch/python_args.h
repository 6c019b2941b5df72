#pragma once
// Python -> core conversions used by the generated bindings. Deliberately
// free of ATen headers so the bindings TU compiles fast; the definitions
// (which need torch's Python API) live in python_args.cpp.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/core.h"
#include "torch/small_list.h"

// torch.Tensor's Python type (libtorch_python), declared here to keep the
// bindings TU free of torch's Python headers.
extern PyObject* THPVariableClass;

// A TorchFunctionMode is active (ATen/PythonTorchFunctionTLS.h, libtorch_cpu;
// declared here for the same reason).
namespace at::impl {
bool torch_function_mode_enabled();
}

namespace infini::ops::torch_bridge {

// One op's Python parameters: positional ones first, then keyword-only.
struct Signature {
  const char* op;
  const char* const* names;
  PyObject** keys;  // interned names, filled on first use (GIL held)
  int num_params;
  int num_positional;
  // Tensor arguments get borrowed handles (no reference taken: the caller's
  // argument objects keep them alive). Set for direct TensorIterator ops,
  // which pair it with release_gil_for (below).
  bool borrow_tensors = false;
  // Tensors that require grad (with grad mode on) or carry a forward-AD
  // tangent are passed to ATen's dispatcher, whose autograd kernel raises
  // exactly where PyTorch does (or accepts non-differentiable outputs). Off
  // for composites, which have no autograd kernel: they refuse such tensors.
  bool aten_autograd = false;

  // __torch_function__ (see torch_function_wanted): parameters that take a
  // tensor (bit p: parameter p), parameters that take a list of tensors.
  uint64_t tensor_params = 0;
  uint64_t tensor_list_params = 0;
  // The ATen overload ("add.out") handed to __torch_function__ as
  // torch.ops.aten.<overload>, with arguments under their schema names; null
  // for composites, which hand over the module's own function and the call's
  // arguments as given.
  const char* aten = nullptr;
  const char* const* schema_names = nullptr;
  // Leading parameters the overload takes positionally (the schema's
  // positional arguments up to its first one this binding hides).
  int aten_positional = 0;
  // Schema names of arguments this binding hides whose schema has no
  // default (null-terminated; null: none): passed to the overload as None.
  const char* const* aten_none = nullptr;
  PyObject** torch_function = nullptr;  // resolved on first use (GIL held)
};

// "op(): argument 'name'", the start of every argument error.
std::string where(const Signature& sig, int i);

// Fills slots[i] with a borrowed reference to parameter i, or nullptr when
// it was not given. False (with a Python TypeError set) on bad arity, an
// unknown keyword or a parameter given twice.
bool parse_args(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames, PyObject** slots);

// PyTorch's override protocol, as torch.<op> honours it: true when an
// argument in a tensor parameter is not exactly a torch.Tensor (a subclass
// or any object overriding __torch_function__) or a TorchFunctionMode is
// active. Plain tensors with no mode cost a type comparison each and one
// thread-local read.
bool torch_function_slow(const Signature& sig, PyObject* const* slots);
bool torch_function_in_lists(const Signature& sig, PyObject* const* slots);
[[gnu::always_inline]] inline bool torch_function_wanted(const Signature& sig,
                                                         PyObject* const* slots) {
  for (uint64_t mask = sig.tensor_params; mask != 0; mask &= mask - 1) {
    PyObject* obj = slots[__builtin_ctzll(mask)];
    if (obj != nullptr && Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(THPVariableClass) &&
        obj != Py_None) [[unlikely]] {
      return torch_function_slow(sig, slots);
    }
  }
  if (sig.tensor_list_params != 0 && torch_function_in_lists(sig, slots)) return true;
  return at::impl::torch_function_mode_enabled() && torch_function_slow(sig, slots);
}

// Hands the call to __torch_function__ (torch's handle_torch_function) and
// returns its result; null with a Python error set on failure.
PyObject* torch_function(const Signature& sig, PyObject* module, PyObject* const* args,
                         Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots);

// Converters. The 3-argument form is for a required parameter; the form with
// a trailing default is used when the parameter has one. Bad values throw
// TypeError/ValueError naming the op and the parameter.
Tensor tensor_arg(PyObject* obj, const Signature& sig, int i);
// An out= tensor (converted as any tensor argument; the name keeps the
// generated code readable).
Tensor tensor_out_arg(PyObject* obj, const Signature& sig, int i);
std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i);
std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     std::nullopt_t);

// Lists keep a few items inline: no heap allocation for usual lengths.
class TensorListArg {
 public:
  SmallList<Tensor, 4> items;
  operator std::span<const Tensor>() const { return {items.data(), items.size()}; }
  operator std::span<Tensor>() { return {items.data(), items.size()}; }
};
TensorListArg tensor_list_arg(PyObject* obj, const Signature& sig, int i);
TensorListArg tensor_list_out_arg(PyObject* obj, const Signature& sig, int i);

class OptionalTensorListArg {
 public:
  SmallList<std::optional<Tensor>, 4> items;
  operator std::span<const std::optional<Tensor>>() const {
    return {items.data(), items.size()};
  }
};
OptionalTensorListArg tensor_opt_list_arg(PyObject* obj, const Signature& sig,
                                          int i);

Scalar scalar_arg(PyObject* obj, const Signature& sig, int i);
Scalar scalar_arg(PyObject* obj, const Signature& sig, int i, Scalar dflt);
std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i);
std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     std::nullopt_t);
std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     Scalar dflt);

class ScalarListArg {
 public:
  SmallList<Scalar, 8> items;
  operator std::span<const Scalar>() const { return {items.data(), items.size()}; }
};
ScalarListArg scalar_list_arg(PyObject* obj, const Signature& sig, int i);

int64_t int_arg(PyObject* obj, const Signature& sig, int i);
int64_t int_arg(PyObject* obj, const Signature& sig, int i, int64_t dflt);
std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i);
std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i,
                                   std::nullopt_t);
// An optional with a non-None default (`int? x=0`): absent -> dflt, None -> nullopt.
std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i,
                                   int64_t dflt);

// Inline storage for up to 8 values: no heap allocation for usual dims.
class IntListArg {
 public:
  Dims values;
  operator std::span<const int64_t>() const { return values.span(); }
};
// size: N of an int[N] parameter (one int is then repeated N times), else 0.
IntListArg int_list_arg(PyObject* obj, const Signature& sig, int i,
                        std::size_t size);
IntListArg int_list_arg(PyObject* obj, const Signature& sig, int i,
                        std::size_t size, std::initializer_list<int64_t> dflt);

class OptionalIntListArg {
 public:
  std::optional<Dims> values;
  operator std::optional<std::span<const int64_t>>() const {
    if (!values) return std::nullopt;
    return values->span();
  }
};
OptionalIntListArg int_list_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::size_t size);
OptionalIntListArg int_list_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::size_t size, std::nullopt_t);

double float_arg(PyObject* obj, const Signature& sig, int i);
double float_arg(PyObject* obj, const Signature& sig, int i, double dflt);
std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i);
std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::nullopt_t);
std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    double dflt);

class OptionalFloatListArg {
 public:
  std::optional<SmallList<double, 8>> values;
  operator std::optional<std::span<const double>>() const {
    if (!values) return std::nullopt;
    return std::span<const double>(values->data(), values->size());
  }
};
OptionalFloatListArg float_list_opt_arg(PyObject* obj, const Signature& sig,
                                        int i);
OptionalFloatListArg float_list_opt_arg(PyObject* obj, const Signature& sig,
                                        int i, std::nullopt_t);

bool bool_arg(PyObject* obj, const Signature& sig, int i);
bool bool_arg(PyObject* obj, const Signature& sig, int i, bool dflt);
std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i);
std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i,
                                 std::nullopt_t);
std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i,
                                 bool dflt);

void fill_bool_array(PyObject* obj, const Signature& sig, int i, bool* out,
                     std::size_t n);
template <std::size_t N>
std::array<bool, N> bool_array_arg(PyObject* obj, const Signature& sig, int i) {
  std::array<bool, N> result{};
  fill_bool_array(obj, sig, i, result.data(), N);
  return result;
}

// Views into the Python str, which the caller's arguments keep alive.
std::string_view str_arg(PyObject* obj, const Signature& sig, int i);
std::string_view str_arg(PyObject* obj, const Signature& sig, int i,
                         std::string_view dflt);
std::optional<std::string_view> str_opt_arg(PyObject* obj, const Signature& sig,
                                            int i);
std::optional<std::string_view> str_opt_arg(PyObject* obj, const Signature& sig,
                                            int i, std::nullopt_t);

DataType dtype_arg(PyObject* obj, const Signature& sig, int i);
std::optional<DataType> dtype_opt_arg(PyObject* obj, const Signature& sig,
                                      int i);
std::optional<DataType> dtype_opt_arg(PyObject* obj, const Signature& sig,
                                      int i, std::nullopt_t);

// implementation="default"|"native"|"torch" (None or absent: default).
Implementation implementation_arg(PyObject* obj, const Signature& sig, int i);

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

// For ops whose tensors arrive with borrowed handles (Signature::
// borrow_tensors): whether to release the GIL for this call. A small call
// keeps it: dropping and retaking the GIL costs more than its kernel, and a
// kernel that copies a borrowed at::Tensor makes torch incref the Python
// object, which is cheap with the GIL held and a full GIL round trip without.
// A large call releases it, after its borrowed handles took real references
// (the Python objects stay alive anyway; this keeps the refcount above one,
// so such copies never need the GIL).
inline constexpr int64_t kKeepGilBelowElements = 32768;  // ATen's grain size

inline int64_t call_numel(const Tensor& t) noexcept { return t.numel(); }
inline int64_t call_numel(const std::optional<Tensor>& t) noexcept {
  return t ? t->numel() : 0;
}
inline void own_handle(Tensor& t) {
  if (t.handle().borrowed()) t = Tensor(t);  // a copy owns
}
inline void own_handle(std::optional<Tensor>& t) {
  if (t) own_handle(*t);
}

template <class... T>
bool release_gil_for(T&... tensors) {
  if ((call_numel(tensors) + ... + 0) < kKeepGilBelowElements) return false;
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

// Call inside `catch (...)`: sets the Python exception PyTorch would raise
// (c10::IndexError -> IndexError, ...; core errors likewise).
void raise_python_error(const Signature& sig) noexcept;

using FastCall = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t,
                               PyObject*);
inline PyCFunction fastcall(FastCall f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

struct OpImplementations {
  const char* op;
  const char* native;  // comma-separated platforms with a native kernel
};
PyObject* implementations_dict(const OpImplementations* ops, std::size_t n);
PyObject* py_platforms(PyObject*, PyObject*);
PyObject* py_set_handle_reuse(PyObject*, PyObject* enabled);
PyObject* py_handle_reuse(PyObject*, PyObject*);
PyObject* py_set_direct_mode(PyObject*, PyObject* enabled);
PyObject* py_direct_mode(PyObject*, PyObject*);

// Test hooks (python_args.cpp): keep a C++ copy of a tensor's core Tensor,
// get it back through its handle, drop all copies.
PyObject* py_debug_keep(PyObject*, PyObject* tensor);
PyObject* py_debug_kept(PyObject*, PyObject* index);
PyObject* py_debug_release(PyObject*, PyObject*);

// Imports torch (THPVariableClass must exist before any tensor check).
bool init_module(PyObject* module);

}  // namespace infini::ops::torch_bridge
