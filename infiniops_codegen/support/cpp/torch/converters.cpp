// Python -> core converters of the argument kinds (see converters.h).
#include "torch/converters.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <bit>
#include <string>
#include <string_view>

#include "torch/aten_convert.h"
#include "torch/call.h"
#include "torch/lane.h"
#include "torch_tables.h"

namespace infini::ops::torch_bridge {

namespace {

const char* type_name(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

// A torch.Tensor or subclass instance, by its real type: unlike
// THPVariable_Check (isinstance), never runs Python code (a __class__
// property, a metaclass's __instancecheck__), so it is safe where pointers
// into other arguments are held, and an object only pretending to be a
// tensor is never unpacked as one.
bool tensor_object(PyObject* obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(THPVariableClass));
}

// numpy's scalar types, which PyTorch's parser takes as numbers. Looked up
// once numpy is imported (never importing it: without numpy there is no
// numpy scalar to meet); GIL held.
struct NumpyTypes {
  PyObject* integer = nullptr;
  PyObject* floating = nullptr;
  PyObject* complexfloating = nullptr;
  PyObject* bool_ = nullptr;
};

const NumpyTypes* numpy_types() {
  static NumpyTypes types;
  static bool resolved = false;
  if (resolved) return &types;
  static PyObject* name = PyUnicode_InternFromString("numpy");
  PyObject* numpy = name != nullptr ? PyImport_GetModule(name) : nullptr;
  if (numpy == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  auto attr = [numpy](const char* n) {
    PyObject* t = PyObject_GetAttrString(numpy, n);  // kept for good
    if (t == nullptr || !PyType_Check(t)) {
      PyErr_Clear();
      Py_XDECREF(t);
      return static_cast<PyObject*>(nullptr);
    }
    return t;
  };
  types = {attr("integer"), attr("floating"), attr("complexfloating"), attr("bool_")};
  Py_DECREF(numpy);
  resolved = true;
  return &types;
}

bool instance_of(PyObject* obj, PyObject* type) {
  return type != nullptr && PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(type));
}

// An int (or int subclass, whose __index__ and __int__ are not called, as in
// PyTorch).
int64_t long_value(PyObject* obj, const Signature& sig, int i) {
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow != 0) {
    throw ValueError(where(sig, i) + ": Overflow when unpacking long long");
  }
  return value;
}

// What obj's __index__ gives (Python code may run); nullopt with no Python
// error set when it has none or it raised.
std::optional<int64_t> index_value(PyObject* obj, const Signature& sig, int i) {
  PyObject* index = PyNumber_Index(obj);
  if (index == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow != 0) {
    throw ValueError(where(sig, i) + ": Overflow when unpacking long long");
  }
  return value;
}

// float(obj) by its __float__ (an int subclass's own, numpy's): Python code
// may run; what it raises is raised as it is, as PyTorch lets it through.
double float_value(PyObject* obj) {
  const double value = PyFloat_AsDouble(obj);
  if (value == -1.0 && PyErr_Occurred()) throw PythonException();
  return value;
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

// A list or tuple, as PyTorch's parser takes for every list parameter (a
// list subclass's own __getitem__ and __len__ are not called, as there).
bool list_or_tuple(PyObject* obj) { return PyList_Check(obj) || PyTuple_Check(obj); }

// The items of a list argument, read once: a new tuple holding them when
// converting one may run Python code (which could shrink the list and free
// the items still to read), else the list itself. Holds a reference.
class Items {
 public:
  Items(PyObject* seq, bool snapshot)
      : seq_(snapshot && PyList_Check(seq) ? PyList_AsTuple(seq) : seq) {
    if (seq_ == nullptr) throw PythonException();
    if (seq_ == seq) Py_INCREF(seq_);
  }
  ~Items() { Py_DECREF(seq_); }
  Items(const Items&) = delete;
  Items& operator=(const Items&) = delete;
  Py_ssize_t size() const { return PySequence_Fast_GET_SIZE(seq_); }
  PyObject* operator[](Py_ssize_t k) const { return PySequence_Fast_GET_ITEM(seq_, k); }

 private:
  PyObject* seq_;
};

// A 0-dim tensor that does not require grad: a Number, as PyTorch takes it.
bool number_tensor(const at::Tensor& t) { return t.dim() == 0 && !t.requires_grad(); }

Scalar scalar_from_tensor(const at::Tensor& t) {
  const at::Scalar s = t.item();
  if (s.isBoolean()) return Scalar(s.toBool());
  if (s.isIntegral(false)) return Scalar(s.toLong());
  if (s.isComplex()) return Scalar(std::complex<double>(s.toComplexDouble()));
  return Scalar(s.toDouble());
}

}  // namespace

bool numpy_int(PyObject* obj) {
  const NumpyTypes* np = numpy_types();
  return np != nullptr && instance_of(obj, np->integer);
}

// torch's is_numpy_scalar.
bool numpy_scalar(PyObject* obj) {
  const NumpyTypes* np = numpy_types();
  return np != nullptr && (instance_of(obj, np->integer) || instance_of(obj, np->floating) ||
                           instance_of(obj, np->complexfloating) || instance_of(obj, np->bool_));
}

namespace {

// The c10 scalar types the library holds (tables::data_type), as a mask.
constexpr uint64_t held_scalar_types() {
  uint64_t mask = 0;
  for (int k = 0; k < static_cast<int>(c10::ScalarType::NumOptions) && k < 64; ++k) {
    bool held = true;
    (void)tables::data_type(static_cast<c10::ScalarType>(k), [&held] {
      held = false;
      return DataType{};
    });
    if (held) mask |= uint64_t{1} << k;
  }
  return mask;
}
constexpr uint64_t kHeldScalarTypes = held_scalar_types();

// plain_tensor and direct_cpu_tensor (aten_convert.h) for the lane, in a
// few instructions: exactly the keys of an ordinary dense CPU tensor outside
// inference mode (an inference tensor lacks the autograd keys; conj and neg
// bits, Python, functorch and every other wrapper add keys), with storage,
// no autograd metadata (or metadata that neither requires grad nor carries
// a tangent), and a dtype the library holds (the general path raises for
// the others).
bool lane_tensor(const at::Tensor& t) noexcept {
  constexpr c10::DispatchKeySet kPlainCpu =
      c10::DispatchKeySet(c10::DispatchKey::CPU) |
      c10::DispatchKeySet(c10::DispatchKey::ADInplaceOrView) |
      c10::DispatchKeySet(c10::DispatchKey::AutogradCPU);
  constexpr c10::DispatchKeySet kAutocast(c10::DispatchKey::AutocastCPU);
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if ((impl->key_set() - kAutocast) != kPlainCpu || !impl->has_storage()) [[unlikely]] {
    return false;
  }
  if (impl->autograd_meta() != nullptr && (impl->requires_grad() || is_dual(t))) [[unlikely]] {
    return false;
  }
  const auto type = static_cast<unsigned>(t.scalar_type());
  return type < 64 && ((kHeldScalarTypes >> type) & 1) != 0;
}

// Whether a call's tensors may borrow while it keeps the GIL: no intra-op
// worker can then copy one (which would need the GIL the caller holds) when
// the op's kernel loops see only raw pointers (Signature::borrow_tensors) or
// there is one intra-op thread (call.h).
bool may_borrow(const Signature& sig) {
  return sig.borrow_tensors || at::get_num_threads() == 1;
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

// What PyTorch's parser takes for a Number (THPUtils_checkScalar, then a
// 0-dim tensor that does not require grad), converted as PythonArgs::scalar
// does: an int subclass's or a float subclass's own methods are not called.
Scalar unpack_scalar(PyObject* obj, const Signature& sig, int i) {
  if (PyBool_Check(obj)) return Scalar(obj == Py_True);
  if (PyLong_Check(obj)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      // PyTorch takes 2**63 to 2**64 - 1 as an unsigned Scalar, which the
      // library's Scalar does not hold.
      throw OverflowError(where(sig, i) + ": int too big to convert");
    }
    return Scalar(static_cast<int64_t>(value));
  }
  if (PyFloat_Check(obj)) return Scalar(PyFloat_AS_DOUBLE(obj));
  if (PyComplex_Check(obj)) {
    const Py_complex c = reinterpret_cast<PyComplexObject*>(obj)->cval;
    return Scalar(std::complex<double>(c.real, c.imag));
  }
  if (tensor_object(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (number_tensor(t)) return scalar_from_tensor(t);
  } else if (numpy_int(obj)) {
    if (const auto value = index_value(obj, sig, i)) return Scalar(*value);
  } else if (numpy_scalar(obj)) {
    return Scalar(float_value(obj));  // numpy bool and floating: a double, as in PyTorch
  }
  wrong_type(obj, sig, i, "Number");
}

// PyTorch's is_scalar_list: every element a Number but a tensor.
ScalarListArg unpack_scalar_list(PyObject* obj, const Signature& sig, int i) {
  if (!list_or_tuple(obj)) wrong_type(obj, sig, i, "tuple of Scalars");
  const Items items(obj, false);  // converting a Number runs no Python code
  ScalarListArg list;
  for (Py_ssize_t k = 0; k < items.size(); ++k) {
    PyObject* item = items[k];
    if (tensor_object(item) ||
        !(PyFloat_Check(item) || PyLong_Check(item) || PyComplex_Check(item) ||
          numpy_scalar(item))) {
      throw TypeError(where(sig, i) + " must be tuple of Scalars, but found element of type " +
                      type_name(item) + " at pos " + std::to_string(k));
    }
    list.items.push_back(unpack_scalar(item, sig, i));
  }
  return list;
}

int64_t unpack_int_arg(PyObject* obj, const Signature& sig, int i) {
  if (PyLong_Check(obj) && !PyBool_Check(obj)) [[likely]] return long_value(obj, sig, i);
  if (tensor_object(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.dim() == 0 && at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) {
      return t.item<int64_t>();
    }
  } else if (numpy_int(obj)) {
    if (const auto value = index_value(obj, sig, i)) return *value;
  }
  wrong_type(obj, sig, i, "int");
}

namespace {

// An element of an int list, or a SymInt: a plain integer tensor of one
// element gives its value (a bool one: 1, but a SymInt refuses it with
// PyTorch's RuntimeError); anything else its __index__ (Python code may
// run), nullopt when it has none.
std::optional<int64_t> index_like(PyObject* obj, const Signature& sig, int i, bool symint) {
  if (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(THPVariableClass)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.numel() != 1 || !at::isIntegralType(t.scalar_type(), /*includeBool=*/true)) {
      return std::nullopt;
    }
    if (symint && t.scalar_type() == at::kBool) {
      throw Error(where(sig, i) + ": a bool tensor is not an int");
    }
    return t.item<int64_t>();
  }
  return index_value(obj, sig, i);
}

}  // namespace

int64_t unpack_symint(PyObject* obj, const Signature& sig, int i) {
  if (PyLong_Check(obj) && !PyBool_Check(obj)) [[likely]] return long_value(obj, sig, i);
  if (!PyBool_Check(obj)) {
    if (const auto value = index_like(obj, sig, i, true)) return *value;
  }
  wrong_type(obj, sig, i, "int");
}

void index_check_slow(PyObject* obj, const Signature& sig, int i, bool list) {
  if (obj == Py_None) return;
  if (list) {
    if (!list_or_tuple(obj)) {
      if (PyLong_Check(obj) || PyBool_Check(obj)) return;  // converted (or refused) later
    } else {
      if (PySequence_Fast_GET_SIZE(obj) == 0) return;
      obj = PySequence_Fast_GET_ITEM(obj, 0);
    }
  }
  if (PyLong_Check(obj) || PyBool_Check(obj) ||
      Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(THPVariableClass)) {
    return;  // runs no Python code: converted (or refused) later
  }
  Py_INCREF(obj);  // an element: its list may lose it meanwhile
  PyObject* index = PyNumber_Index(obj);
  const std::string type = type_name(obj);
  Py_DECREF(obj);
  if (index == nullptr) {
    PyErr_Clear();
    throw TypeError(where(sig, i) + " must be " + (list ? "tuple of ints" : "int") +
                    ", not " + type);
  }
  Py_DECREF(index);
}

Dims unpack_int_list(PyObject* obj, const Signature& sig, int i, std::size_t size,
                     bool symint) {
  if (!list_or_tuple(obj)) {
    // int[N], N > 0: one int stands for N copies of it.
    if (size > 0 && !PyBool_Check(obj)) {
      if (PyLong_Check(obj)) return Dims(size, long_value(obj, sig, i));
      if (numpy_int(obj) ||
          (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(THPVariableClass))) {
        if (const auto value = index_like(obj, sig, i, false)) return Dims(size, *value);
      } else if (index_value(obj, sig, i)) {
        // PyTorch's check takes any __index__ here, but its conversion then
        // fails (an internal assert): the same RuntimeError.
        throw Error(where(sig, i) + " must be a tuple of ints or an int, not " +
                    type_name(obj));
      }
    }
    wrong_type(obj, sig, i, "tuple of ints");
  }
  // Exact ints (the usual case) convert without running Python code: read
  // in place. Any other element may run some, so then every element is
  // read again from a snapshot.
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  PyObject* const* in_place = PySequence_Fast_ITEMS(obj);
  Dims values(static_cast<std::size_t>(n));
  Py_ssize_t done = 0;
  for (int overflow = 0; done < n && PyLong_CheckExact(in_place[done]); ++done) {
    values[static_cast<std::size_t>(done)] = PyLong_AsLongLongAndOverflow(in_place[done], &overflow);
    if (overflow != 0) break;
  }
  if (done == n) return values;
  const Items items(obj, true);
  values = Dims(static_cast<std::size_t>(items.size()));
  for (Py_ssize_t k = 0; k < items.size(); ++k) {
    PyObject* item = items[k];
    std::optional<int64_t> value;
    if (PyLong_Check(item) && !PyBool_Check(item)) {
      int overflow = 0;
      value = PyLong_AsLongLongAndOverflow(item, &overflow);
      if (overflow != 0) {
        throw TypeError(where(sig, i) + " failed to unpack the object at pos " +
                        std::to_string(k + 1) + " with error \"Overflow when unpacking long long\"");
      }
    } else if (k > 0 || !PyBool_Check(item)) {
      // PyTorch checks the first element (a bool is refused there) and
      // converts the others with __index__ (a bool is 0 or 1 there).
      value = index_like(item, sig, i, symint);
    }
    if (!value) {
      throw TypeError(where(sig, i) + " must be tuple of ints, but found element of type " +
                      type_name(item) + " at pos " + std::to_string(k));
    }
    values[static_cast<std::size_t>(k)] = *value;
  }
  // int[N] only means "a single int is repeated N times"; ATen checks
  // lengths itself, as PyTorch's parser leaves it to.
  return values;
}

// What PyTorch's parser takes for a float (THPUtils_checkDouble, then a
// 0-dim tensor that does not require grad), converted as it converts it:
// a float subclass's own __float__ is not called, an int subclass's is.
double unpack_float(PyObject* obj, const Signature& sig, int i) {
  if (PyFloat_Check(obj)) [[likely]] return PyFloat_AS_DOUBLE(obj);
  if (PyLong_CheckExact(obj) || PyBool_Check(obj)) {
    const double value = PyLong_AsDouble(obj);
    if (value == -1.0 && PyErr_Occurred()) throw PythonException();  // OverflowError
    return value;
  }
  if (PyLong_Check(obj) || numpy_scalar(obj)) return float_value(obj);
  if (tensor_object(obj)) {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (number_tensor(t)) return t.item<double>();
  }
  wrong_type(obj, sig, i, "float");
}

// float[]: PyTorch checks the first element (a float, an int, a numpy scalar
// or a complex) and converts each with its __float__ (Python code may run:
// the elements are then read from a snapshot).
FloatListArg unpack_float_list(PyObject* obj, const Signature& sig, int i) {
  if (!list_or_tuple(obj)) wrong_type(obj, sig, i, "tuple of floats");
  bool exact = true;
  for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n && exact; ++k) {
    exact = PyFloat_CheckExact(PySequence_Fast_GET_ITEM(obj, k));
  }
  const Items items(obj, !exact);
  FloatListArg list;
  for (Py_ssize_t k = 0; k < items.size(); ++k) {
    PyObject* item = items[k];
    const bool number = PyFloat_Check(item) || PyLong_Check(item) || numpy_scalar(item);
    if (k == 0 && !number && !PyComplex_Check(item)) wrong_type(obj, sig, i, "tuple of floats");
    double value = 0;
    if (PyFloat_Check(item)) {
      value = PyFloat_AS_DOUBLE(item);
    } else {
      value = PyFloat_AsDouble(item);
      if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw TypeError(where(sig, i) + " must be tuple of floats, but found element of type " +
                        type_name(item) + " at pos " + std::to_string(k));
      }
    }
    list.items.push_back(value);
  }
  return list;
}

bool unpack_bool(PyObject* obj, const Signature& sig, int i) {
  if (PyBool_Check(obj)) return obj == Py_True;
  wrong_type(obj, sig, i, "bool");
}

void unpack_bool_array(PyObject* obj, const Signature& sig, int i, bool* out,
                       std::size_t n) {
  if (!list_or_tuple(obj)) wrong_type(obj, sig, i, "tuple of bools");
  const Items items(obj, false);  // a bool converts without running Python code
  if (static_cast<std::size_t>(items.size()) != n) {
    throw TypeError(where(sig, i) + " must be a tuple of " + std::to_string(n) +
                    " bools, got " + std::to_string(items.size()));
  }
  for (std::size_t k = 0; k < n; ++k) {
    out[k] = unpack_bool(items[static_cast<Py_ssize_t>(k)], sig, i);
  }
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
  c10::ScalarType type;
  if (THPDtype_Check(obj)) {
    type = reinterpret_cast<THPDtype*>(obj)->scalar_type;
  } else if (obj == reinterpret_cast<PyObject*>(&PyFloat_Type)) {  // as PyTorch's parser
    type = c10::kDouble;
  } else if (obj == reinterpret_cast<PyObject*>(&PyLong_Type)) {
    type = c10::kLong;
  } else if (obj == reinterpret_cast<PyObject*>(&PyBool_Type)) {
    type = c10::kBool;
  } else if (obj == reinterpret_cast<PyObject*>(&PyComplex_Type)) {
    type = c10::kComplexDouble;
  } else {
    wrong_type(obj, sig, i, "torch.dtype");
  }
  try {
    return from_aten(type);
  } catch (const TypeError& e) {
    throw TypeError(where(sig, i) + ": " + e.what());
  }
}

PyObject* g_implementation_names[3] = {};

Implementation unpack_implementation(PyObject* obj, const Signature& sig, int i) {
  const auto parsed = parse_implementation(unpack_str(obj, sig, i));
  if (!parsed) {
    throw ValueError(where(sig, i) + " must be 'default', 'native' or 'torch', got '" +
                     std::string(unpack_str(obj, sig, i)) + "'");
  }
  return *parsed;
}

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

// --- Calls without out= ------------------------------------------------------

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
