// Python -> core conversions and error translation for the bindings.
#include "torch/python_args.h"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "torch/aten_convert.h"

namespace infini::ops::torch_bridge {

std::string where(const Signature& sig, int i) {
  return std::string(sig.op) + "(): argument '" + sig.names[i] + "'";
}

namespace {

const char* type_name(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

[[noreturn]] void wrong_type(PyObject* obj, const Signature& sig, int i,
                             const char* expected) {
  throw TypeError(where(sig, i) + " must be " + expected + ", not " +
                  type_name(obj));
}

[[noreturn]] void missing(const Signature& sig, int i) {
  throw TypeError(std::string(sig.op) + "() missing required argument '" +
                  sig.names[i] + "'");
}

bool is_int(PyObject* obj) {
  return PyLong_Check(obj) && !PyBool_Check(obj);
}

// Python ints and objects with __index__ (numpy integers), not bool.
bool int_like(PyObject* obj) {
  if (PyBool_Check(obj)) return false;
  if (PyLong_Check(obj)) return true;
  return PyIndex_Check(obj);  // numpy ints; 1-element integer tensors
}

int64_t unpack_int(PyObject* obj, const Signature& sig, int i) {
  int overflow = 0;
  long long value;
  if (PyLong_Check(obj)) {
    value = PyLong_AsLongLongAndOverflow(obj, &overflow);
  } else {
    PyObject* index = PyNumber_Index(obj);
    if (index == nullptr) {
      PyErr_Clear();
      wrong_type(obj, sig, i, "int");
    }
    value = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
  }
  if (overflow != 0) {
    throw ValueError(where(sig, i) + ": Overflow when unpacking long long");
  }
  if (value == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    wrong_type(obj, sig, i, "int");
  }
  return value;
}

double unpack_float(PyObject* obj, const Signature& sig, int i) {
  if (PyFloat_Check(obj)) return PyFloat_AS_DOUBLE(obj);
  if (PyLong_Check(obj)) {
    const double value = PyLong_AsDouble(obj);
    if (value == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw Error(where(sig, i) + ": int too large to convert to float");
    }
    return value;
  }
  if (!THPVariable_Check(obj) && PyNumber_Check(obj) && !PyComplex_Check(obj)) {
    const double value = PyFloat_AsDouble(obj);  // numpy floats
    if (!(value == -1.0 && PyErr_Occurred())) return value;
    PyErr_Clear();
  }
  wrong_type(obj, sig, i, "float");
}

// Inside a catch handler: the same error type, naming the op and argument
// unless the message already starts with the op.
template <class E>
[[noreturn]] void rethrow_located(const E& e, const Signature& sig, int i) {
  if (std::string_view(e.what()).starts_with(sig.op)) throw;
  throw E(where(sig, i) + ": " + e.what());
}

// borrow: the handle holds no reference (the argument's Python object keeps
// the TensorImpl alive for the call). Elements of lists own theirs: another
// thread may empty a list while the GIL is released.
Tensor unpack_tensor(PyObject* obj, const Signature& sig, int i, bool output,
                     bool borrow) {
  if (!THPVariable_Check(obj)) wrong_type(obj, sig, i, "Tensor");
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (t.layout() != c10::kStrided || t.is_nested()) {
    throw TypeError(where(sig, i) + ": only strided (dense) tensors are supported");
  }
  if (t.requires_grad() && at::GradMode::is_enabled() &&
      !(sig.aten_autograd && g_handle_reuse.load(std::memory_order_relaxed))) {
    // What PyTorch's differentiable out= overloads raise. Plain ATen ops
    // leave the decision to ATen's autograd kernel (reached through the
    // dispatcher: direct mode skips such tensors); native kernels, composites
    // and from_blob tensors would bypass it, so they refuse.
    throw Error(std::string(sig.op) +
                "(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad.");
  }
  try {
    if (t.is_conj() || t.is_neg()) [[unlikely]] {
      // The core describes plain memory: a lazy conj/neg bit would be lost
      // on the from_blob path and in native kernels.
      if (output) {
        throw TypeError(where(sig, i) +
                        ": outputs with the conjugate or negative bit set are not "
                        "supported; pass a tensor without it (see resolve_conj())");
      }
      return from_aten(t.resolve_conj().resolve_neg());
    }
    return borrow ? from_aten_borrowed(t) : from_aten(t);
  } catch (const TypeError& e) {  // an unsupported dtype
    rethrow_located(e, sig, i);
  } catch (const Error& e) {  // an unsupported device: RuntimeError
    rethrow_located(e, sig, i);
  }
}

// A list or tuple (fast path) or any other sequence; never a str or tensor.
PyObject* as_sequence(PyObject* obj, const Signature& sig, int i,
                      const char* expected) {
  if (PyList_Check(obj) || PyTuple_Check(obj)) {
    Py_INCREF(obj);
    return obj;
  }
  if (PyUnicode_Check(obj) || THPVariable_Check(obj) || !PySequence_Check(obj)) {
    wrong_type(obj, sig, i, expected);
  }
  PyObject* seq = PySequence_Fast(obj, "");
  if (seq == nullptr) {
    PyErr_Clear();
    wrong_type(obj, sig, i, expected);
  }
  return seq;
}

class SequenceRef {
 public:
  SequenceRef(PyObject* obj, const Signature& sig, int i, const char* expected)
      : seq_(as_sequence(obj, sig, i, expected)) {}
  ~SequenceRef() { Py_DECREF(seq_); }
  Py_ssize_t size() const { return PySequence_Fast_GET_SIZE(seq_); }
  PyObject* operator[](Py_ssize_t k) const {
    return PySequence_Fast_GET_ITEM(seq_, k);
  }

 private:
  PyObject* seq_;
};

Scalar scalar_from_tensor(PyObject* obj, const Signature& sig, int i) {
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (t.numel() != 1) {
    throw TypeError(where(sig, i) + " must be Number, not a Tensor with " +
                    std::to_string(t.numel()) + " elements");
  }
  const at::Scalar s = t.item();
  if (s.isBoolean()) return Scalar(s.toBool());
  if (s.isIntegral(false)) return Scalar(s.toLong());
  if (s.isComplex()) return Scalar(std::complex<double>(s.toComplexDouble()));
  return Scalar(s.toDouble());
}

Scalar unpack_scalar(PyObject* obj, const Signature& sig, int i) {
  if (PyBool_Check(obj)) return Scalar(obj == Py_True);
  if (PyLong_Check(obj)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      throw OverflowError(where(sig, i) + ": int too big to convert");
    }
    return Scalar(static_cast<int64_t>(value));
  }
  if (THPVariable_Check(obj)) return scalar_from_tensor(obj, sig, i);
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (PyComplex_Check(obj)) {
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(obj),
                                       PyComplex_ImagAsDouble(obj)));
  }
  if (int_like(obj)) return Scalar(unpack_int(obj, sig, i));
  if (!THPVariable_Check(obj) && PyNumber_Check(obj)) {
    return Scalar(unpack_float(obj, sig, i));
  }
  wrong_type(obj, sig, i, "Number");
}

Dims unpack_int_list(PyObject* obj, const Signature& sig, int i,
                     std::size_t size) {
  if (int_like(obj)) {
    if (size == 0) wrong_type(obj, sig, i, "tuple of ints");
    return Dims(size, unpack_int(obj, sig, i));
  }
  SequenceRef seq(obj, sig, i, "tuple of ints");
  Dims values(static_cast<std::size_t>(seq.size()));
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    PyObject* item = seq[k];
    if (!int_like(item)) {
      throw TypeError(where(sig, i) + " must be tuple of ints, but found element of type " +
                      type_name(item) + " at pos " + std::to_string(k));
    }
    try {
      values[static_cast<std::size_t>(k)] = unpack_int(item, sig, i);
    } catch (const ValueError& e) {  // PyTorch: TypeError for list elements
      throw TypeError(where(sig, i) + " failed to unpack the object at pos " +
                      std::to_string(k) + ": Overflow when unpacking long long");
    }
  }
  // int[N] only means "a single int is repeated N times"; ATen checks
  // lengths itself, as PyTorch's parser leaves it to.
  return values;
}

std::string_view unpack_str(PyObject* obj, const Signature& sig, int i) {
  if (!PyUnicode_Check(obj)) wrong_type(obj, sig, i, "str");
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw ValueError(where(sig, i) + " is not valid UTF-8");
  }
  return std::string_view(data, static_cast<std::size_t>(size));
}

DataType unpack_dtype(PyObject* obj, const Signature& sig, int i) {
  if (!THPDtype_Check(obj)) wrong_type(obj, sig, i, "torch.dtype");
  try {
    return from_aten(reinterpret_cast<THPDtype*>(obj)->scalar_type);
  } catch (const TypeError& e) {
    throw TypeError(where(sig, i) + ": " + e.what());
  }
}

bool unpack_bool(PyObject* obj, const Signature& sig, int i) {
  if (PyBool_Check(obj)) return obj == Py_True;
  wrong_type(obj, sig, i, "bool");
}

bool absent(PyObject* obj) { return obj == nullptr || obj == Py_None; }

}  // namespace

bool parse_args(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
                PyObject* kwnames, PyObject** slots) {
  if (nargs > sig.num_positional) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes at most %d positional argument%s (%zd given)",
                 sig.op, sig.num_positional, sig.num_positional == 1 ? "" : "s",
                 nargs);
    return false;
  }
  for (Py_ssize_t k = 0; k < nargs; ++k) slots[k] = args[k];
  if (kwnames == nullptr) return true;
  if (sig.keys[0] == nullptr) {
    for (int p = 0; p < sig.num_params; ++p) {
      sig.keys[p] = PyUnicode_InternFromString(sig.names[p]);
      if (sig.keys[p] == nullptr) return false;
    }
  }
  const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    int found = -1;
    for (int p = 0; p < sig.num_params; ++p) {  // interned: pointer compare
      if (sig.keys[p] == key) {
        found = p;
        break;
      }
    }
    if (found < 0) {
      for (int p = 0; p < sig.num_params; ++p) {
        if (PyUnicode_Compare(sig.keys[p], key) == 0) {
          found = p;
          break;
        }
      }
      if (PyErr_Occurred()) return false;
    }
    if (found < 0) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                   sig.op, key);
      return false;
    }
    if (slots[found] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                   sig.op, sig.names[found]);
      return false;
    }
    slots[found] = args[nargs + k];
  }
  return true;
}

Tensor tensor_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_tensor(obj, sig, i, false, sig.borrow_tensors);
}

std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return tensor_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_tensor(obj, sig, i, false, sig.borrow_tensors);
}

namespace {

TensorListArg unpack_tensor_list(PyObject* obj, const Signature& sig, int i,
                                 bool output) {
  if (obj == nullptr) missing(sig, i);
  SequenceRef seq(obj, sig, i, "tuple of Tensors");
  TensorListArg list;
  list.items.reserve(static_cast<std::size_t>(seq.size()));
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    if (!THPVariable_Check(seq[k])) {
      throw TypeError(where(sig, i) + " must be tuple of Tensors, but found element of type " +
                      type_name(seq[k]) + " at pos " + std::to_string(k));
    }
    list.items.push_back(unpack_tensor(seq[k], sig, i, output, false));
  }
  return list;
}

}  // namespace

TensorListArg tensor_list_arg(PyObject* obj, const Signature& sig, int i) {
  return unpack_tensor_list(obj, sig, i, false);
}

TensorListArg tensor_list_out_arg(PyObject* obj, const Signature& sig, int i) {
  return unpack_tensor_list(obj, sig, i, true);
}

Tensor tensor_out_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_tensor(obj, sig, i, true, sig.borrow_tensors);
}

OptionalTensorListArg tensor_opt_list_arg(PyObject* obj, const Signature& sig,
                                          int i) {
  if (obj == nullptr) missing(sig, i);
  SequenceRef seq(obj, sig, i, "tuple of Tensors");
  OptionalTensorListArg list;
  list.items.reserve(static_cast<std::size_t>(seq.size()));
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    if (seq[k] == Py_None) {
      list.items.emplace_back(std::nullopt);
    } else if (THPVariable_Check(seq[k])) {
      list.items.emplace_back(unpack_tensor(seq[k], sig, i, false, false));
    } else {
      throw TypeError(where(sig, i) + " must be tuple of Tensors or None, but found element of type " +
                      type_name(seq[k]) + " at pos " + std::to_string(k));
    }
  }
  return list;
}

Scalar scalar_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_scalar(obj, sig, i);
}

Scalar scalar_arg(PyObject* obj, const Signature& sig, int i, Scalar dflt) {
  return obj == nullptr ? dflt : unpack_scalar(obj, sig, i);
}

std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return scalar_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_scalar(obj, sig, i);
}

ScalarListArg scalar_list_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  SequenceRef seq(obj, sig, i, "tuple of Numbers");
  ScalarListArg list;
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    list.items.push_back(unpack_scalar(seq[k], sig, i));
  }
  return list;
}

int64_t int_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  if (!int_like(obj)) wrong_type(obj, sig, i, "int");
  return unpack_int(obj, sig, i);
}

int64_t int_arg(PyObject* obj, const Signature& sig, int i, int64_t dflt) {
  return obj == nullptr ? dflt : int_arg(obj, sig, i);
}

std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return int_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i,
                                   std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return int_arg(obj, sig, i);
}

std::optional<int64_t> int_opt_arg(PyObject* obj, const Signature& sig, int i,
                                   int64_t dflt) {
  if (obj == nullptr) return dflt;
  return int_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    double dflt) {
  if (obj == nullptr) return dflt;
  return float_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i,
                                 bool dflt) {
  if (obj == nullptr) return dflt;
  return bool_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<Scalar> scalar_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     Scalar dflt) {
  if (obj == nullptr) return dflt;
  return scalar_opt_arg(obj, sig, i, std::nullopt);
}

IntListArg int_list_arg(PyObject* obj, const Signature& sig, int i,
                        std::size_t size) {
  if (obj == nullptr) missing(sig, i);
  return IntListArg{unpack_int_list(obj, sig, i, size)};
}

IntListArg int_list_arg(PyObject* obj, const Signature& sig, int i,
                        std::size_t size, std::initializer_list<int64_t> dflt) {
  // As PyTorch's parser: None stands for an empty default (`int[1] dim=[]`).
  if (obj == nullptr || (obj == Py_None && dflt.size() == 0)) {
    return IntListArg{Dims(dflt)};
  }
  return IntListArg{unpack_int_list(obj, sig, i, size)};
}

OptionalIntListArg int_list_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::size_t size) {
  if (obj == nullptr) missing(sig, i);
  return int_list_opt_arg(obj, sig, i, size, std::nullopt);
}

OptionalIntListArg int_list_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::size_t size, std::nullopt_t) {
  if (absent(obj)) return OptionalIntListArg{};
  return OptionalIntListArg{unpack_int_list(obj, sig, i, size)};
}

double float_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_float(obj, sig, i);
}

double float_arg(PyObject* obj, const Signature& sig, int i, double dflt) {
  return obj == nullptr ? dflt : unpack_float(obj, sig, i);
}

std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return float_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<double> float_opt_arg(PyObject* obj, const Signature& sig, int i,
                                    std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_float(obj, sig, i);
}

OptionalFloatListArg float_list_opt_arg(PyObject* obj, const Signature& sig,
                                        int i) {
  if (obj == nullptr) missing(sig, i);
  return float_list_opt_arg(obj, sig, i, std::nullopt);
}

OptionalFloatListArg float_list_opt_arg(PyObject* obj, const Signature& sig,
                                        int i, std::nullopt_t) {
  if (absent(obj)) return OptionalFloatListArg{};
  SequenceRef seq(obj, sig, i, "tuple of floats");
  SmallList<double, 8> values;
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    values.push_back(unpack_float(seq[k], sig, i));
  }
  return OptionalFloatListArg{std::move(values)};
}

bool bool_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_bool(obj, sig, i);
}

bool bool_arg(PyObject* obj, const Signature& sig, int i, bool dflt) {
  return obj == nullptr ? dflt : unpack_bool(obj, sig, i);
}

std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return bool_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<bool> bool_opt_arg(PyObject* obj, const Signature& sig, int i,
                                 std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_bool(obj, sig, i);
}

void fill_bool_array(PyObject* obj, const Signature& sig, int i, bool* out,
                     std::size_t n) {
  if (obj == nullptr) missing(sig, i);
  SequenceRef seq(obj, sig, i, "tuple of bools");
  if (static_cast<std::size_t>(seq.size()) != n) {
    throw TypeError(where(sig, i) + " must be a tuple of " + std::to_string(n) +
                    " bools, got " + std::to_string(seq.size()));
  }
  for (std::size_t k = 0; k < n; ++k) {
    out[k] = unpack_bool(seq[static_cast<Py_ssize_t>(k)], sig, i);
  }
}

std::string_view str_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_str(obj, sig, i);
}

std::string_view str_arg(PyObject* obj, const Signature& sig, int i,
                         std::string_view dflt) {
  return obj == nullptr ? dflt : unpack_str(obj, sig, i);
}

std::optional<std::string_view> str_opt_arg(PyObject* obj, const Signature& sig,
                                            int i) {
  if (obj == nullptr) missing(sig, i);
  return str_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<std::string_view> str_opt_arg(PyObject* obj, const Signature& sig,
                                            int i, std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_str(obj, sig, i);
}

DataType dtype_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_dtype(obj, sig, i);
}

std::optional<DataType> dtype_opt_arg(PyObject* obj, const Signature& sig,
                                      int i) {
  if (obj == nullptr) missing(sig, i);
  return dtype_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<DataType> dtype_opt_arg(PyObject* obj, const Signature& sig,
                                      int i, std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_dtype(obj, sig, i);
}

Implementation implementation_arg(PyObject* obj, const Signature& sig, int i) {
  if (absent(obj)) return Implementation::kDefault;
  const auto parsed = parse_implementation(unpack_str(obj, sig, i));
  if (!parsed) {
    throw ValueError(where(sig, i) + " must be 'default', 'native' or 'torch', got '" +
                     std::string(unpack_str(obj, sig, i)) + "'");
  }
  return *parsed;
}

static_assert(sizeof(torch::PyWarningHandler) <= sizeof(WarningScope),
              "WarningScope storage too small for torch::PyWarningHandler");
static_assert(alignof(torch::PyWarningHandler) <= alignof(WarningScope));

WarningScope::WarningScope() noexcept {
  new (storage_) torch::PyWarningHandler();
}

WarningScope::~WarningScope() noexcept(false) {
  // May throw python_error when a warning filter turns a warning into an
  // error; the bindings call this inside their try block.
  std::launder(reinterpret_cast<torch::PyWarningHandler*>(storage_))->~PyWarningHandler();
}

void WarningScope::set_in_exception() noexcept {
  std::launder(reinterpret_cast<torch::PyWarningHandler*>(storage_))->set_in_exception();
}

void raise_python_error(const Signature& sig) noexcept {
  try {
    throw;
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const OverflowError& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    if (msg.find("Trying to resize storage that is not resizable") != std::string::npos) {
      // ATen tried to grow an output that came through the from_blob path.
      PyErr_Format(PyExc_RuntimeError,
                   "%s(): an output must be resized, but it has no PyTorch handle "
                   "(from_blob path), so its storage cannot grow; pass an output "
                   "of the result's shape (%s)",
                   sig.op, msg.c_str());
    } else {
      torch::translate_exception_to_python(std::current_exception());
    }
  } catch (...) {
    // c10 errors and the rest: exactly PyTorch's own translation.
    torch::translate_exception_to_python(std::current_exception());
  }
}

PyObject* implementations_dict(const OpImplementations* ops, std::size_t n) {
  PyObject* platforms = py_platforms(nullptr, nullptr);
  if (platforms == nullptr) return nullptr;
  PyObject* result = PyDict_New();
  PyObject* native = PyUnicode_FromString("native");
  PyObject* torch = PyUnicode_FromString("torch");
  bool ok = result != nullptr && native != nullptr && torch != nullptr;
  for (std::size_t k = 0; ok && k < n; ++k) {
    PyObject* per_platform = PyDict_New();
    ok = per_platform != nullptr;
    for (Py_ssize_t p = 0; ok && p < PyList_GET_SIZE(platforms); ++p) {
      PyObject* name = PyList_GET_ITEM(platforms, p);
      const std::string list = std::string(",") + ops[k].native + ",";
      const std::string needle = std::string(",") + PyUnicode_AsUTF8(name) + ",";
      const bool has_native = list.find(needle) != std::string::npos;
      PyObject* impls = PyList_New(0);
      ok = impls != nullptr && (!has_native || PyList_Append(impls, native) == 0) &&
           PyList_Append(impls, torch) == 0;
      ok = ok && PyDict_SetItem(per_platform, name, impls) == 0;
      Py_XDECREF(impls);
    }
    ok = ok && PyDict_SetItemString(result, ops[k].op, per_platform) == 0;
    Py_XDECREF(per_platform);
  }
  Py_XDECREF(native);
  Py_XDECREF(torch);
  Py_DECREF(platforms);
  if (!ok) {
    Py_XDECREF(result);
    return nullptr;
  }
  return result;
}

PyObject* py_platforms(PyObject*, PyObject*) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  const char* built[] = {
#ifdef WITH_CPU
      "cpu",
#endif
#ifdef WITH_NVIDIA
      "nvidia",
#endif
      nullptr};
  for (const char** p = built; *p != nullptr; ++p) {
    PyObject* name = PyUnicode_FromString(*p);
    if (name == nullptr || PyList_Append(list, name) < 0) {
      Py_XDECREF(name);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(name);
  }
  return list;
}

namespace {

PyObject* set_switch(std::atomic<bool>& flag, const char* name, PyObject* enabled) {
  if (!PyBool_Check(enabled)) {
    PyErr_Format(PyExc_TypeError, "%s() takes a bool, not %s", name,
                 Py_TYPE(enabled)->tp_name);
    return nullptr;
  }
  flag.store(enabled == Py_True, std::memory_order_relaxed);
  Py_RETURN_NONE;
}

}  // namespace

PyObject* py_set_handle_reuse(PyObject*, PyObject* enabled) {
  return set_switch(g_handle_reuse, "set_handle_reuse", enabled);
}

PyObject* py_handle_reuse(PyObject*, PyObject*) {
  return PyBool_FromLong(g_handle_reuse.load(std::memory_order_relaxed));
}

PyObject* py_set_direct_mode(PyObject*, PyObject* enabled) {
  return set_switch(g_direct_mode, "set_direct_mode", enabled);
}

PyObject* py_direct_mode(PyObject*, PyObject*) {
  return PyBool_FromLong(g_direct_mode.load(std::memory_order_relaxed));
}

bool init_module(PyObject*) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return false;
  Py_DECREF(torch);
  return true;
}

namespace {

// Test hooks: hold a core Tensor copy beyond the Python call, to check that
// the source handle keeps the framework tensor (and its data) alive.
std::mutex g_kept_mutex;
std::vector<Tensor> g_kept;  // C++ copies; their handles own references

}  // namespace

PyObject* py_debug_keep(PyObject*, PyObject* obj) {
  if (!THPVariable_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "_debug_keep() takes a Tensor, not %s",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  try {
    // As a call's argument arrives: a borrowed handle. The kept copy must
    // own a reference of its own, or the tests that drop every Python
    // reference would read freed memory.
    const Tensor borrowed = from_aten_borrowed(THPVariable_Unpack(obj));
    std::lock_guard<std::mutex> lock(g_kept_mutex);
    g_kept.push_back(borrowed);
    return PyLong_FromSize_t(g_kept.size() - 1);
  } catch (...) {
    static const char* const names[] = {"tensor"};
    raise_python_error(Signature{"_debug_keep", names, nullptr, 1, 1});
    return nullptr;
  }
}

PyObject* py_debug_kept(PyObject*, PyObject* index) {
  const Py_ssize_t i = PyLong_AsSsize_t(index);
  if (i == -1 && PyErr_Occurred()) return nullptr;
  std::lock_guard<std::mutex> lock(g_kept_mutex);
  if (i < 0 || static_cast<std::size_t>(i) >= g_kept.size()) {
    PyErr_SetString(PyExc_IndexError, "_debug_kept(): no tensor kept at that index");
    return nullptr;
  }
  // Through the handle: the very at::Tensor that arrived, not a copy of data.
  return THPVariable_Wrap(to_aten_owned(g_kept[static_cast<std::size_t>(i)]));
}

PyObject* py_debug_release(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_kept_mutex);
  g_kept.clear();
  Py_RETURN_NONE;
}

}  // namespace infini::ops::torch_bridge
