// Parsing a vectorcall against an op's Signature (see signature.h).
#include "torch/signature.h"

#include <string>

#include "core/error.h"

namespace infini::ops::torch_bridge {

std::string where(const Signature& sig, int i) {
  return std::string(sig.op) + "(): argument '" + sig.names[i] + "'";
}

void missing(const Signature& sig, int i) {
  throw TypeError(std::string(sig.op) + "() missing required argument '" +
                  sig.names[i] + "'");
}

void wrong_type(PyObject* obj, const Signature& sig, int i, const char* expected) {
  throw TypeError(where(sig, i) + " must be " + expected + ", not " + Py_TYPE(obj)->tp_name);
}

namespace {

// out=(a, b): the outputs of a several-output op in one tuple or list, as
// torch's out= takes them. The items are borrowed from the sequence, which
// the call's arguments keep alive; a list is kept in the slot after the
// parameters' for the binding to take them again (OutList).
bool take_outputs(const Signature& sig, PyObject* value, PyObject** slots) {
  if (!(PyTuple_Check(value) || PyList_Check(value))) {
    PyErr_Format(PyExc_TypeError,
                 "%s(): argument 'out' must be a tuple of %d Tensors, not %s", sig.op,
                 sig.num_outs, Py_TYPE(value)->tp_name);
    return false;
  }
  if (PySequence_Fast_GET_SIZE(value) != sig.num_outs) {
    PyErr_Format(PyExc_TypeError,
                 "%s(): argument 'out' must be a tuple of %d Tensors, not a %s of %zd",
                 sig.op, sig.num_outs, Py_TYPE(value)->tp_name,
                 PySequence_Fast_GET_SIZE(value));
    return false;
  }
  PyObject** items = PySequence_Fast_ITEMS(value);
  for (int j = 0; j < sig.num_outs; ++j) {
    const int p = sig.out_params[j];
    if (slots[p] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                   sig.op, sig.names[p]);
      return false;
    }
    slots[p] = items[j];
  }
  slots[sig.num_params] = value;
  return true;
}

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
    PyObject* value = args[nargs + k];
    // out=None: no outputs given, as torch takes it.
    if (sig.num_outs > 1 && value == Py_None &&
        PyUnicode_CompareWithASCIIString(key, "out") == 0) {
      continue;
    }
    // out= with several outputs is their tuple, even where the first output
    // itself is named `out` (as in max_pool2d_with_indices.out).
    if (sig.num_outs > 1 && (PyTuple_Check(value) || PyList_Check(value)) &&
        PyUnicode_CompareWithASCIIString(key, "out") == 0) {
      if (!take_outputs(sig, value, slots)) return false;
      continue;
    }
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
    if (found < 0 && sig.num_outs > 1 && PyUnicode_CompareWithASCIIString(key, "out") == 0) {
      if (!take_outputs(sig, value, slots)) return false;  // the error: not a tuple
      continue;
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
    slots[found] = value;
  }
  return true;
}

}  // namespace infini::ops::torch_bridge
