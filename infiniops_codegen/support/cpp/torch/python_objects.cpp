// Python objects as torch's argument parser reads them (python_objects.h).
#include "torch/python_objects.h"

#include <torch/csrc/autograd/python_variable.h>

#include "core/error.h"

namespace infini::ops::torch_bridge {

const char* type_name(PyObject* obj) { return Py_TYPE(obj)->tp_name; }

bool tensor_object(PyObject* obj) {
  return PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(THPVariableClass));
}

namespace {

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

int64_t long_value(PyObject* obj, const Signature& sig, int i) {
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow != 0) {
    throw ValueError(where(sig, i) + ": Overflow when unpacking long long");
  }
  return value;
}

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

double float_value(PyObject* obj) {
  const double value = PyFloat_AsDouble(obj);
  if (value == -1.0 && PyErr_Occurred()) throw PythonException();
  return value;
}

}  // namespace infini::ops::torch_bridge
