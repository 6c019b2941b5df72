// Overload resolution of the module's torch-like functions (overloads.h).
#include "torch/overloads.h"

#include <ATen/core/Tensor.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>

#include "torch/python_objects.h"

namespace infini::ops::torch_bridge {

// A named namespace: the bridge's Python sources are one unity TU.
namespace overload_resolution {

// The library's own keywords, which every op takes besides torch's.
bool library_keyword(PyObject* key) {
  return PyUnicode_CompareWithASCIIString(key, "implementation") == 0 ||
         PyUnicode_CompareWithASCIIString(key, "stream") == 0;
}

bool is_int(PyObject* obj) { return PyLong_Check(obj) && !PyBool_Check(obj); }

bool is_number(PyObject* obj) {
  return PyFloat_Check(obj) || PyLong_Check(obj) || PyComplex_Check(obj);
}

// THPVariable_Check, which is isinstance() and so runs the metaclass's
// __instancecheck__ (a Python call, an allocation) for anything but a
// tensor: the common non-tensors are told apart first.
bool is_tensor(PyObject* obj) {
  if (Py_TYPE(obj) == reinterpret_cast<PyTypeObject*>(THPVariableClass)) return true;
  if (is_number(obj) || obj == Py_None || PyUnicode_Check(obj) || PyTuple_Check(obj) ||
      PyList_Check(obj)) {
    return false;
  }
  return THPVariable_Check(obj);
}

// A 0-dim tensor that does not require grad stands for a number.
bool is_scalar_tensor(PyObject* obj, bool integral) {
  if (!is_tensor(obj)) return false;
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (t.requires_grad() || t.dim() != 0) return false;
  return !integral || at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

bool is_sequence(PyObject* obj) { return PyTuple_Check(obj) || PyList_Check(obj); }

// Every item passes (an empty sequence does). A check may run Python code
// (isinstance of an odd object): the size is read again for each item and
// the item held while checked.
template <class F>
bool all_items(PyObject* obj, F&& f) {
  for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(obj); ++k) {
    PyObject* item = PySequence_Fast_GET_ITEM(obj, k);
    Py_INCREF(item);
    const bool ok = f(item);
    Py_DECREF(item);
    if (!ok) return false;
  }
  return true;
}

// torch's THPUtils_checkIndex: not a bool; an int, or anything __index__
// takes (called here, as torch calls it: Python code may run).
bool index_check(PyObject* obj) {
  if (PyBool_Check(obj)) return false;
  if (PyLong_Check(obj)) return true;
  PyObject* index = PyNumber_Index(obj);
  if (index == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(index);
  return true;
}

// The first item of a list, or null for an empty one; a new reference.
PyObject* first_item(PyObject* obj) {
  if (PySequence_Fast_GET_SIZE(obj) == 0) return nullptr;
  PyObject* item = PySequence_Fast_GET_ITEM(obj, 0);
  Py_INCREF(item);
  return item;
}

bool check(const OverloadParam& p, PyObject* obj, bool numbers_as_tensors) {
  switch (p.match) {
    case Match::kTensor:
      return is_tensor(obj) || (numbers_as_tensors && is_number(obj));
    case Match::kScalar:
      return is_number(obj) || numpy_scalar(obj) || is_scalar_tensor(obj, false);
    case Match::kFloat:
      return PyFloat_Check(obj) || PyLong_Check(obj) || numpy_scalar(obj) ||
             is_scalar_tensor(obj, false);
    case Match::kInt:
      return is_int(obj) || numpy_int(obj) || is_scalar_tensor(obj, true);
    case Match::kSymInt:
      return index_check(obj);
    case Match::kBool:
      return PyBool_Check(obj);
    case Match::kStr:
      return PyUnicode_Check(obj);
    case Match::kDtype:
      return THPDtype_Check(obj) || obj == reinterpret_cast<PyObject*>(&PyFloat_Type) ||
             obj == reinterpret_cast<PyObject*>(&PyLong_Type) ||
             obj == reinterpret_cast<PyObject*>(&PyBool_Type) ||
             obj == reinterpret_cast<PyObject*>(&PyComplex_Type);
    case Match::kGenerator:
      return THPGenerator_Check(obj);
    case Match::kLayout:
      return THPLayout_Check(obj);
    case Match::kDevice:
      return is_int(obj) || PyUnicode_Check(obj) || THPDevice_Check(obj);
    case Match::kMemoryFormat:
      return THPMemoryFormat_Check(obj);
    case Match::kDimname:
      return PyUnicode_Check(obj) || obj == Py_None;
    case Match::kTensorOrTensorList:
      if (is_tensor(obj)) return true;
      [[fallthrough]];
    case Match::kTensorList:
      return is_sequence(obj) && all_items(obj, [](PyObject* item) {
               return is_tensor(item) || item == Py_None;
             });
    case Match::kIntList:
    case Match::kSymIntList:
      // torch looks at the first item only; one int stands for `int[N]`.
      if (is_sequence(obj)) {
        PyObject* first = first_item(obj);
        const bool ok = first == nullptr || index_check(first);
        Py_XDECREF(first);
        return ok;
      }
      return p.size > 0 && index_check(obj);
    case Match::kFloatList: {
      if (!is_sequence(obj)) return false;
      PyObject* first = first_item(obj);  // torch looks at it only
      const bool ok = first == nullptr || PyFloat_Check(first) || PyLong_Check(first) ||
                      PyComplex_Check(first) || numpy_scalar(first);
      Py_XDECREF(first);
      return ok;
    }
    case Match::kScalarList:
      return is_sequence(obj) && all_items(obj, [](PyObject* item) {
               return is_number(item) || numpy_scalar(item);
             });
    case Match::kBoolList:
      return is_sequence(obj);
    case Match::kDimnameList:
      return is_sequence(obj) || (p.size == 1 && PyUnicode_Check(obj));
    case Match::kAny:
      return true;
  }
  return false;
}

bool intern_keys(const Overload& o) {
  if (o.num_params == 0 || o.keys[0] != nullptr) return true;
  for (int p = 0; p < o.num_params; ++p) {
    o.keys[p] = PyUnicode_InternFromString(o.params[p].name);
    if (o.keys[p] == nullptr) return false;
  }
  return true;
}

// The keyword argument named as parameter p, or null.
PyObject* keyword(const Overload& o, int p, PyObject* const* kwargs, PyObject* kwnames,
                  Py_ssize_t nkw) {
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (PyTuple_GET_ITEM(kwnames, k) == o.keys[p]) return kwargs[k];
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, k), o.keys[p]) == 0) return kwargs[k];
  }
  return nullptr;
}

// torch's FunctionSignature::parse, without raising: positional arguments
// first, then each parameter by keyword; every keyword must name one.
bool matches(const Overload& o, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs > o.num_positional) return false;
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  Py_ssize_t used = 0;
  for (int p = 0; p < o.num_params; ++p) {
    const OverloadParam& param = o.params[p];
    PyObject* obj = nullptr;
    if (p < nargs) {
      obj = args[p];
    } else if (nkw > 0) {
      obj = keyword(o, p, args + nargs, kwnames, nkw);
      if (obj != nullptr) ++used;
    }
    if (obj == nullptr) {
      if (!param.has_default) return false;
      continue;
    }
    if (obj == Py_None && param.allow_none) continue;
    if (!check(param, obj, o.numbers_as_tensors)) return false;
  }
  for (Py_ssize_t k = 0; k < nkw && used < nkw; ++k) {
    if (library_keyword(PyTuple_GET_ITEM(kwnames, k))) ++used;
  }
  return used == nkw;
}

std::string type_name(PyObject* obj) {
  if (is_tensor(obj)) return "Tensor";
  if (is_sequence(obj)) {
    std::string items;
    for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n; ++k) {
      items += (k ? ", " : "") + type_name(PySequence_Fast_ITEMS(obj)[k]);
    }
    return std::string(Py_TYPE(obj)->tp_name) + " of [" + items + "]";
  }
  return Py_TYPE(obj)->tp_name;
}

// torch's "received an invalid combination of arguments" TypeError.
void no_match(const OverloadedFunction& f, PyObject* const* args, Py_ssize_t nargs,
              PyObject* kwnames) {
  std::string got;
  for (Py_ssize_t k = 0; k < nargs; ++k) got += (k ? ", " : "") + type_name(args[k]);
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    got += std::string(nargs + k ? ", " : "") + (key ? key : "?") + "=" +
           type_name(args[nargs + k]);
  }
  std::string msg = std::string(f.name) +
                    "() received an invalid combination of arguments - got (" + got +
                    "), but expected one of:";
  for (int i = 0; i < f.count; ++i) {
    const Overload& o = f.overloads[i];
    const char* open = std::char_traits<char>::find(o.text, std::char_traits<char>::length(o.text), '(');
    msg += std::string("\n * ") + (open ? open : o.text);
    if (o.binding == nullptr) msg += std::string("  [not in this build: ") + o.aten + "]";
  }
  PyErr_SetString(PyExc_TypeError, msg.c_str());
}

}  // namespace overload_resolution

using namespace overload_resolution;

PyObject* call_overloaded(const OverloadedFunction& f, PyObject* module,
                          PyObject* const* args, Py_ssize_t nargs,
                          PyObject* kwnames) noexcept {
  try {
    for (int i = 0; i < f.count; ++i) {
      const Overload& o = f.overloads[i];
      if (!intern_keys(o)) return nullptr;
      if (!matches(o, args, nargs, kwnames)) {
        if (PyErr_Occurred()) return nullptr;
        continue;
      }
      if (o.binding == nullptr) {
        PyErr_Format(PyExc_NotImplementedError,
                     "%s(): the call matches torch's signature %s (ATen %s), which is "
                     "not in this build; %s",
                     f.name, o.text, o.aten, o.remedy);
        return nullptr;
      }
      return o.binding(module, args, nargs, kwnames);
    }
    no_match(f, args, nargs, kwnames);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace infini::ops::torch_bridge
