// `stream=` conversion for the generated bindings (see stream_args.h).
#include "torch/stream_args.h"

#include <string>

namespace infini::ops::torch_bridge {

namespace {

// A Python int -> the pointer it spells; false (error cleared) when it is
// not an int that fits a pointer.
bool handle_of_int(PyObject* value, void** handle) {
  if (!PyLong_Check(value) || PyBool_Check(value)) return false;
  void* result = PyLong_AsVoidPtr(value);
  if (result == nullptr && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  *handle = result;
  return true;
}

}  // namespace

Stream stream_from_object(PyObject* obj, const Signature& sig, int i,
                          const char* const* attributes) {
  void* handle = nullptr;
  if (handle_of_int(obj, &handle)) return Stream::of(handle);
  std::string accepted;
  for (const char* const* name = attributes; *name != nullptr; ++name) {
    accepted += std::string(accepted.empty() ? "" : ", ") + "." + *name;
    PyObject* value = PyObject_GetAttrString(obj, *name);
    if (value == nullptr) {
      PyErr_Clear();
      continue;
    }
    const bool ok = handle_of_int(value, &handle);
    Py_DECREF(value);
    if (ok) return Stream::of(handle);
  }
  throw TypeError(where(sig, i) + " must be None, an int (a raw stream handle) or a stream " +
                  (accepted.empty() ? std::string("(this build has no platform with streams)")
                                    : "object with " + accepted) +
                  ", not " + Py_TYPE(obj)->tp_name);
}

}  // namespace infini::ops::torch_bridge
