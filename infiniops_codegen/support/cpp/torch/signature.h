#pragma once
// One op's Python parameters and the parsing of a vectorcall into them: the
// first step of every generated binding. Only Python.h: the bindings TU
// stays free of torch's headers.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <string>

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
  // Of tensor_params, those that take None (`Tensor?`).
  uint64_t optional_tensor_params = 0;
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
  // The outputs' parameters (indices). Several outputs: `out=` may give
  // them as one tuple or list, as torch's out= takes them...
  const int* out_params = nullptr;
  int num_outs = 0;
  // ...and the torch.return_types.<name> they are returned as (torch's
  // structseq, field names and all); null: a plain tuple.
  const char* return_type = nullptr;
  PyObject** return_type_object = nullptr;  // resolved on first use (GIL held)

  // A call may leave the outputs out (out= absent or None): they are then
  // allocated as torch's call without out= allocates them, and returned.
  bool out_optional = false;
  // Such a call is the functional overload ("add.Tensor") for
  // __torch_function__ (null: the op is a composite, handed over as is)...
  const char* aten_functional = nullptr;
  PyObject** functional_torch_function = nullptr;  // resolved on first use
  // ...and several outputs come back as torch.return_types.<name> of it
  // (torch.max(x, 1) is a torch.return_types.max; null: a plain tuple).
  const char* functional_return_type = nullptr;
  PyObject** functional_return_type_object = nullptr;  // resolved on first use
  // Tensor parameters that take a Python number, as a 0-dim "wrapped
  // number" tensor (torch does this for add, sub, mul, div, ...).
  uint64_t number_tensor_params = 0;
  // A native kernel on some platform (ops.require_native: a call of an op
  // without one falls back whatever its arguments).
  bool has_native = false;
};

inline bool is_output_param(const Signature& sig, int p) noexcept {
  for (int j = 0; j < sig.num_outs; ++j) {
    if (sig.out_params[j] == p) return true;
  }
  return false;
}

// Whether a call left every output out (absent, or out=None).
inline bool outs_absent(const Signature& sig, PyObject* const* slots) noexcept {
  for (int j = 0; j < sig.num_outs; ++j) {
    PyObject* obj = slots[sig.out_params[j]];
    if (obj != nullptr && obj != Py_None) return false;
  }
  return true;
}

// "op(): argument 'name'", the start of every argument error.
std::string where(const Signature& sig, int i);

// Fills slots[i] with a borrowed reference to parameter i, or nullptr when
// it was not given, and slots[sig.num_params] with out= when it gives a
// several-output op's outputs as one list or tuple (their slots then hold its
// items: see OutList). False (with a Python TypeError set) on bad arity, an
// unknown keyword or a parameter given twice.
bool parse_args(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames, PyObject** slots);

// A Python exception that Python code run by a conversion (an int
// subclass's __float__, ...) raised: carried to the binding's exit
// (raise_python_error) and raised there as it is, as PyTorch lets it through.
// Made and destroyed with the GIL held.
class PythonException {
 public:
  PythonException() noexcept {  // takes the exception set now
#if PY_VERSION_HEX >= 0x030C0000
    value_ = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&type_, &value_, &traceback_);
#endif
  }
  PythonException(PythonException&& other) noexcept
      : type_(other.type_), value_(other.value_), traceback_(other.traceback_) {
    other.type_ = other.value_ = other.traceback_ = nullptr;
  }
  PythonException(const PythonException&) = delete;
  PythonException& operator=(const PythonException&) = delete;
  ~PythonException() {
    Py_XDECREF(type_);
    Py_XDECREF(value_);
    Py_XDECREF(traceback_);
  }
  // Sets it again as the current Python exception.
  void restore() noexcept {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(value_);
#else
    PyErr_Restore(type_, value_, traceback_);
#endif
    type_ = value_ = traceback_ = nullptr;
  }

 private:
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
};

// Argument errors: PyTorch's TypeError for a missing argument or a value of
// the wrong type, naming the op and the parameter.
[[noreturn]] void missing(const Signature& sig, int i);
[[noreturn]] void wrong_type(PyObject* obj, const Signature& sig, int i,
                             const char* expected);

}  // namespace infini::ops::torch_bridge
