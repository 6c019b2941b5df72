// Number arguments and their lists, Python -> core (unpack_numbers.h).
#include "torch/unpack_numbers.h"

#include <torch/csrc/autograd/python_variable.h>

#include <complex>
#include <optional>
#include <string>

#include "torch/python_objects.h"

namespace infini::ops::torch_bridge {

namespace {

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

}  // namespace infini::ops::torch_bridge
