#pragma once
// The module's own functions beside the ops (the method table of the
// generated bindings): implementations(), platforms(), the runtime switches,
// and the module's initialisation.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstddef>

namespace infini::ops::torch_bridge {

using FastCall = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t,
                               PyObject*);
inline PyCFunction fastcall(FastCall f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

struct OpImplementations {
  const char* op;
  const char* native;  // comma-separated platforms with a native kernel
};
PyObject* implementations_dict(const OpImplementations* ops, std::size_t n);
PyObject* py_platforms(PyObject*, PyObject*);
PyObject* py_set_handle_reuse(PyObject*, PyObject* enabled);
PyObject* py_handle_reuse(PyObject*, PyObject*);
PyObject* py_set_wrapper_pool(PyObject*, PyObject* enabled);
PyObject* py_wrapper_pool(PyObject*, PyObject*);
PyObject* py_debug_wrapper_pool(PyObject*, PyObject* clear);
PyObject* py_set_direct_mode(PyObject*, PyObject* enabled);
PyObject* py_direct_mode(PyObject*, PyObject*);
PyObject* py_set_lane(PyObject*, PyObject* enabled);
PyObject* py_lane(PyObject*, PyObject*);
PyObject* py_debug_lane_calls(PyObject*, PyObject*);
// What ran where (core/observe.h).
PyObject* py_observe_stats(PyObject*, PyObject*);
PyObject* py_observe_reset_stats(PyObject*, PyObject* count);
PyObject* py_observe_trace(PyObject*, PyObject* path);
PyObject* py_observe_end_trace(PyObject*, PyObject*);
PyObject* py_observe_require_native(PyObject*, PyObject* ops);
PyObject* py_observe_flags(PyObject*, PyObject*);

// Runs fn with the GIL held; a C++ exception becomes the Python exception
// PyTorch raises for it (register_torch_ops, of the generated bindings).
PyObject* call_guarded(void (*fn)());

// Imports torch (THPVariableClass must exist before any tensor check).
bool init_module(PyObject* module);

}  // namespace infini::ops::torch_bridge
