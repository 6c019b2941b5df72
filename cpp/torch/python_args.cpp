// Python -> core conversions and error translation for the bindings.
#include "torch/python_args.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/python_arg_parser.h>

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

// Whether t may take the library's own paths (native kernels, the from_blob
// path, direct ATen kernels): a plain dense tensor with storage on a backend
// the library knows, whose every use ATen's dispatcher would hand straight to
// the backend kernel. Anything else (fake, meta, functorch and functionalize
// wrappers, conj/neg bits, sparse, nested, forward-AD duals, inference
// tensors outside inference mode) is passed to ATen's dispatcher as the
// original at::Tensor, never through its data pointer. Modes (a
// TorchDispatchMode, a functorch layer) are a property of the call, not of a
// tensor: each path checks them once (torch_fallback::native_context,
// direct_cpu_context, reusable_impl).
bool plain_tensor(const at::Tensor& t) {
  constexpr c10::DispatchKeySet kFunctionality =
      c10::autograd_dispatch_keyset_with_ADInplaceOrView | c10::autocast_dispatch_keyset;
  const c10::DispatchKeySet rest = t.key_set() - kFunctionality;
  if (rest != c10::DispatchKeySet(c10::DispatchKey::CPU) &&
      rest != c10::DispatchKeySet(c10::DispatchKey::CUDA) &&
      rest != c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) [[unlikely]] {
    return false;
  }
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) [[unlikely]] return false;
  if (impl->is_inference() && !c10::InferenceMode::is_enabled()) [[unlikely]] return false;
  if (const auto* meta = static_cast<const torch::autograd::AutogradMeta*>(impl->autograd_meta());
      meta != nullptr && meta->fw_grad_ && !meta->fw_grad_->empty()) [[unlikely]] {
    return false;  // a forward-AD dual: the autograd kernel decides
  }
  return true;
}

bool is_dual(const at::Tensor& t) {
  const auto* meta =
      static_cast<const torch::autograd::AutogradMeta*>(t.unsafeGetTensorImpl()->autograd_meta());
  return meta != nullptr && meta->fw_grad_ && !meta->fw_grad_->empty();
}

// borrow: the handle holds no reference (the argument's Python object keeps
// the TensorImpl alive for the call). Elements of lists own theirs: another
// thread may empty a list while the GIL is released.
Tensor unpack_tensor(PyObject* obj, const Signature& sig, int i, bool borrow) {
  if (!THPVariable_Check(obj)) wrong_type(obj, sig, i, "Tensor");
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
  // Python floats and complexes before the tensor check: THPVariable_Check
  // of a non-tensor goes through torch.Tensor's metaclass __instancecheck__,
  // which allocates a bound method on every call.
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (PyComplex_Check(obj)) {
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(obj),
                                       PyComplex_ImagAsDouble(obj)));
  }
  const bool tensor = THPVariable_Check(obj);
  if (tensor) return scalar_from_tensor(obj, sig, i);
  if (int_like(obj)) return Scalar(unpack_int(obj, sig, i));
  if (!tensor && PyNumber_Check(obj)) {
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
  return unpack_tensor(obj, sig, i, sig.borrow_tensors);
}

std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return tensor_opt_arg(obj, sig, i, std::nullopt);
}

std::optional<Tensor> tensor_opt_arg(PyObject* obj, const Signature& sig, int i,
                                     std::nullopt_t) {
  if (absent(obj)) return std::nullopt;
  return unpack_tensor(obj, sig, i, sig.borrow_tensors);
}

namespace {

TensorListArg unpack_tensor_list(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  SequenceRef seq(obj, sig, i, "tuple of Tensors");
  TensorListArg list;
  list.items.reserve(static_cast<std::size_t>(seq.size()));
  for (Py_ssize_t k = 0; k < seq.size(); ++k) {
    if (!THPVariable_Check(seq[k])) {
      throw TypeError(where(sig, i) + " must be tuple of Tensors, but found element of type " +
                      type_name(seq[k]) + " at pos " + std::to_string(k));
    }
    list.items.push_back(unpack_tensor(seq[k], sig, i, false));
  }
  return list;
}

}  // namespace

TensorListArg tensor_list_arg(PyObject* obj, const Signature& sig, int i) {
  return unpack_tensor_list(obj, sig, i);
}

TensorListArg tensor_list_out_arg(PyObject* obj, const Signature& sig, int i) {
  return unpack_tensor_list(obj, sig, i);
}

Tensor tensor_out_arg(PyObject* obj, const Signature& sig, int i) {
  if (obj == nullptr) missing(sig, i);
  return unpack_tensor(obj, sig, i, sig.borrow_tensors);
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
      list.items.emplace_back(unpack_tensor(seq[k], sig, i, false));
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
  try {
    throw;
  } catch (const OutputNotResizable&) {
    // ATen resized a from_blob stand-in of the output and warned that the
    // output "was resized"; the caller's tensor was not, and the call fails
    // saying so. Our handler is the current one (any nested one is gone) and
    // is the first member of torch::PyWarningHandler, in storage_.
    c10::WarningHandler* current = c10::WarningUtils::get_warning_handler();
    if (current == reinterpret_cast<c10::WarningHandler*>(storage_)) {
      auto& buffer = static_cast<torch::PyWarningHandler::InternalHandler*>(current)->warning_buffer_;
      std::erase_if(buffer, [](const c10::Warning& w) {
        return w.msg().find("was resized since it had shape") != std::string::npos;
      });
    }
  } catch (...) {
  }
}

namespace {

// torch._C._disabled_torch_function_impl: a __torch_function__ equal to it
// opts out of the protocol (set at init_module).
PyObject* g_disabled_torch_function = nullptr;

// torch's check_has_torch_function for one argument, modes aside.
bool overrides_torch_function(PyObject* obj) {
  if (obj == nullptr || obj == Py_None) return false;
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == reinterpret_cast<PyTypeObject*>(THPVariableClass) || tp == &PyBool_Type ||
      tp == &PyLong_Type || tp == &PyFloat_Type || tp == &PyComplex_Type ||
      tp == &PyList_Type || tp == &PyTuple_Type || tp == &PyDict_Type ||
      tp == &PySet_Type || tp == &PyFrozenSet_Type || tp == &PyUnicode_Type ||
      tp == &PyBytes_Type || tp == &PySlice_Type || tp == Py_TYPE(Py_None) ||
      tp == Py_TYPE(Py_Ellipsis) || tp == Py_TYPE(Py_NotImplemented)) {
    return false;
  }
  PyObject* attr = PyObject_GetAttrString(obj, "__torch_function__");
  if (attr == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool overrides = attr != g_disabled_torch_function;
  Py_DECREF(attr);
  return overrides;
}

// Calls f(obj) for every argument of a tensor or tensor-list parameter.
template <class F>
void for_each_tensor_argument(const Signature& sig, PyObject* const* slots, F&& f) {
  for (int p = 0; p < sig.num_params; ++p) {
    PyObject* obj = slots[p];
    if (obj == nullptr) continue;
    if (sig.tensor_params >> p & 1) {
      f(obj);
    } else if (sig.tensor_list_params >> p & 1) {
      if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyObject** items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n; ++k) f(items[k]);
      } else {
        f(obj);  // a tensor-like object standing for the whole list
      }
    }
  }
}

// torch's ordering of overloaded arguments: one per type, a subclass before
// its superclasses, otherwise in argument order.
void append_overloaded(std::vector<PyObject*>& overloaded, PyObject* obj) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  for (PyObject* seen : overloaded) {
    if (reinterpret_cast<PyObject*>(Py_TYPE(seen)) == type) return;
  }
  auto at = overloaded.end();
  for (auto it = overloaded.begin(); it != overloaded.end(); ++it) {
    if (PyObject_IsSubclass(type, reinterpret_cast<PyObject*>(Py_TYPE(*it))) == 1) {
      at = it;
      break;
    }
  }
  overloaded.insert(at, obj);
}

class PyRef {
 public:
  explicit PyRef(PyObject* obj = nullptr) noexcept : obj_(obj) {}
  ~PyRef() { Py_XDECREF(obj_); }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyObject* get() const noexcept { return obj_; }
  explicit operator bool() const noexcept { return obj_ != nullptr; }
  void reset(PyObject* obj) noexcept {
    Py_XDECREF(obj_);
    obj_ = obj;
  }

 private:
  PyObject* obj_;
};

// torch.ops.aten.<name>.<overload>, resolved once per op.
PyObject* aten_overload(const Signature& sig) {
  if (*sig.torch_function != nullptr) return *sig.torch_function;
  const std::string_view full(sig.aten);
  const auto dot = full.find('.');
  const std::string name(full.substr(0, dot));
  const std::string overload(dot == std::string_view::npos ? "default" : full.substr(dot + 1));
  PyRef torch(PyImport_ImportModule("torch"));
  PyRef ops(torch ? PyObject_GetAttrString(torch.get(), "ops") : nullptr);
  PyRef aten(ops ? PyObject_GetAttrString(ops.get(), "aten") : nullptr);
  PyRef packet(aten ? PyObject_GetAttrString(aten.get(), name.c_str()) : nullptr);
  PyObject* func = packet ? PyObject_GetAttrString(packet.get(), overload.c_str()) : nullptr;
  *sig.torch_function = func;  // kept for the life of the process
  return func;
}

}  // namespace

// The list part of torch_function_wanted: any element not exactly a tensor.
bool torch_function_in_lists(const Signature& sig, PyObject* const* slots) {
  for (uint64_t mask = sig.tensor_list_params; mask != 0; mask &= mask - 1) {
    PyObject* obj = slots[__builtin_ctzll(mask)];
    if (obj == nullptr) continue;
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) return torch_function_slow(sig, slots);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n; ++k) {
      if (Py_TYPE(items[k]) != reinterpret_cast<PyTypeObject*>(THPVariableClass) &&
          items[k] != Py_None) {
        return torch_function_slow(sig, slots);
      }
    }
  }
  return false;
}

bool torch_function_slow(const Signature& sig, PyObject* const* slots) {
  bool wanted = at::impl::torch_function_mode_enabled();
  if (!wanted && at::impl::PythonTorchFunctionTLS::get_disabled_state() ==
                     at::impl::TorchFunctionDisabledState::ENABLED) {
    for_each_tensor_argument(sig, slots, [&](PyObject* obj) {
      wanted = wanted || overrides_torch_function(obj);
    });
  }
  // torch._C._skip_one_hop_torch_function(): the next check says no.
  return wanted && !at::impl::PythonTorchFunctionTLS::exchange_skip_next(false);
}

PyObject* torch_function(const Signature& sig, PyObject* module, PyObject* const* args,
                         Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots) {
  try {
    std::vector<PyObject*> overloaded;
    if (at::impl::PythonTorchFunctionTLS::get_disabled_state() ==
        at::impl::TorchFunctionDisabledState::ENABLED) {
      for_each_tensor_argument(sig, slots, [&](PyObject* obj) {
        if (overrides_torch_function(obj)) append_overloaded(overloaded, obj);
      });
    }
    PyRef func;
    PyRef call_args;
    PyRef call_kwargs(PyDict_New());
    std::string name;
    const char* module_name = nullptr;
    if (call_kwargs && sig.aten != nullptr) {
      // The ATen overload with its schema's argument names; implementation=
      // and stream= belong to this library, not to ATen.
      PyObject* overload = aten_overload(sig);
      if (overload == nullptr) return nullptr;
      Py_INCREF(overload);
      func.reset(overload);
      int positional = 0;
      while (positional < sig.aten_positional && slots[positional] != nullptr) ++positional;
      call_args.reset(PyTuple_New(positional));
      for (int p = 0; call_args && p < positional; ++p) {
        Py_INCREF(slots[p]);
        PyTuple_SET_ITEM(call_args.get(), p, slots[p]);
      }
      for (int p = positional; call_args && p < sig.num_params - 2; ++p) {
        if (slots[p] != nullptr &&
            PyDict_SetItemString(call_kwargs.get(), sig.schema_names[p], slots[p]) < 0) {
          return nullptr;
        }
      }
      for (const char* const* n = sig.aten_none; n != nullptr && *n != nullptr; ++n) {
        if (PyDict_SetItemString(call_kwargs.get(), *n, Py_None) < 0) return nullptr;
      }
      name = sig.aten;
      module_name = "torch.ops.aten";
    } else if (call_kwargs) {
      // A composite: the module's own function, called as it was.
      func.reset(PyObject_GetAttrString(module, sig.op));
      call_args.reset(PyTuple_New(nargs));
      for (Py_ssize_t k = 0; call_args && k < nargs; ++k) {
        Py_INCREF(args[k]);
        PyTuple_SET_ITEM(call_args.get(), k, args[k]);
      }
      const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t k = 0; k < nkw; ++k) {
        if (PyDict_SetItem(call_kwargs.get(), PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) {
          return nullptr;
        }
      }
      name = sig.op;
      module_name = PyModule_GetName(module);
      if (module_name == nullptr) return nullptr;
    }
    if (!func || !call_args || !call_kwargs) return nullptr;
    return torch::handle_torch_function_no_python_arg_parser(
        overloaded, call_args.get(), call_kwargs.get(), name.c_str(), func.get(), module_name);
  } catch (...) {
    raise_python_error(sig);
    return nullptr;
  }
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
  // The platform table's platforms this build has (generated/platform_table.h).
  for (const char* const* p = kBuiltPlatforms; *p != nullptr; ++p) {
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
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  Py_DECREF(torch);
  if (c == nullptr) return false;
  g_disabled_torch_function = PyObject_GetAttrString(c, "_disabled_torch_function_impl");
  Py_DECREF(c);
  return g_disabled_torch_function != nullptr;  // kept for the process
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
