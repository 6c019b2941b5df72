// str and torch.dtype arguments, Python -> core (unpack_str_dtype.h).
#include "torch/unpack_str_dtype.h"

#include <torch/csrc/Dtype.h>

#include <string>

#include "torch/aten/dtype_device.h"

namespace infini::ops::torch_bridge {

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

}  // namespace infini::ops::torch_bridge
