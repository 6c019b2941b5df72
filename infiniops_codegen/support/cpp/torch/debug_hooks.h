#pragma once
// Test hooks of the module (_debug_keep, _debug_kept, _debug_release).

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace infini::ops::torch_bridge {

// Test hooks: keep a C++ copy of a tensor's core Tensor,
// get it back through its handle, drop all copies.
PyObject* py_debug_keep(PyObject*, PyObject* tensor);
PyObject* py_debug_kept(PyObject*, PyObject* index);
PyObject* py_debug_release(PyObject*, PyObject*);

}  // namespace infini::ops::torch_bridge
