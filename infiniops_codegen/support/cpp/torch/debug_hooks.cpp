// The module's test hooks (see debug_hooks.h).
#include "torch/debug_hooks.h"

#include <torch/csrc/autograd/python_variable.h>

#include <mutex>
#include <vector>

#include "torch/aten/handles.h"
#include "torch/aten/tensor_args.h"
#include "torch/python_errors.h"

namespace infini::ops::torch_bridge {

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
