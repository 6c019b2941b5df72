// The module's own functions (see module_functions.h).
#include "torch/module_functions.h"

#include <torch/csrc/Exceptions.h>

#include <atomic>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/observe.h"
#include "torch/aten/direct_mode.h"
#include "torch/aten/from_blob.h"
#include "torch/aten/handles.h"
#include "torch/lane.h"
#include "torch/library_link.h"
#include "torch/torch_function.h"
#include "torch/unpack_str_dtype.h"

namespace infini::ops::torch_bridge {

PyObject* call_guarded(void (*fn)()) {
  HANDLE_TH_ERRORS
  fn();
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* implementations_dict(const OpImplementations* ops, std::size_t n) {
  PyObject* platforms = py_platforms(nullptr, nullptr);
  if (platforms == nullptr) return nullptr;
  PyObject* result = PyDict_New();
  PyObject* native = PyUnicode_FromString("native");
  PyObject* torch = PyUnicode_FromString("torch");
  bool ok = result != nullptr && native != nullptr && torch != nullptr;
  for (std::size_t k = 0; ok && k < n; ++k) {
    PyObject* per_platform = PyDict_New();
    ok = per_platform != nullptr;
    for (Py_ssize_t p = 0; ok && p < PyList_GET_SIZE(platforms); ++p) {
      PyObject* name = PyList_GET_ITEM(platforms, p);
      const std::string list = std::string(",") + ops[k].native + ",";
      const std::string needle = std::string(",") + PyUnicode_AsUTF8(name) + ",";
      const bool has_native = list.find(needle) != std::string::npos;
      PyObject* impls = PyList_New(0);
      ok = impls != nullptr && (!has_native || PyList_Append(impls, native) == 0) &&
           PyList_Append(impls, torch) == 0;
      ok = ok && PyDict_SetItem(per_platform, name, impls) == 0;
      Py_XDECREF(impls);
    }
    ok = ok && PyDict_SetItemString(result, ops[k].op, per_platform) == 0;
    Py_XDECREF(per_platform);
  }
  Py_XDECREF(native);
  Py_XDECREF(torch);
  Py_DECREF(platforms);
  if (!ok) {
    Py_XDECREF(result);
    return nullptr;
  }
  return result;
}

PyObject* py_platforms(PyObject*, PyObject*) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  // The platform table's platforms this build has (generated/platform_table.h).
  for (const char* const* p = kBuiltPlatforms; *p != nullptr; ++p) {
    PyObject* name = PyUnicode_FromString(*p);
    if (name == nullptr || PyList_Append(list, name) < 0) {
      Py_XDECREF(name);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(name);
  }
  return list;
}

namespace {

PyObject* set_switch(std::atomic<bool>& flag, const char* name, PyObject* enabled) {
  if (!PyBool_Check(enabled)) {
    PyErr_Format(PyExc_TypeError, "%s() takes a bool, not %s", name,
                 Py_TYPE(enabled)->tp_name);
    return nullptr;
  }
  flag.store(enabled == Py_True, std::memory_order_relaxed);
  Py_RETURN_NONE;
}

}  // namespace

PyObject* py_set_handle_reuse(PyObject*, PyObject* enabled) {
  return set_switch(g_handle_reuse, "set_handle_reuse", enabled);
}

PyObject* py_handle_reuse(PyObject*, PyObject*) {
  return PyBool_FromLong(g_handle_reuse.load(std::memory_order_relaxed));
}

PyObject* py_set_wrapper_pool(PyObject*, PyObject* enabled) {
  return set_switch(g_wrapper_pool, "set_wrapper_pool", enabled);
}

PyObject* py_wrapper_pool(PyObject*, PyObject*) {
  return PyBool_FromLong(g_wrapper_pool.load(std::memory_order_relaxed));
}

PyObject* py_debug_wrapper_pool(PyObject*, PyObject* clear) {
  if (!PyBool_Check(clear)) {
    PyErr_SetString(PyExc_TypeError, "_debug_wrapper_pool() takes a bool");
    return nullptr;
  }
  if (clear == Py_True) clear_wrapper_pool();
  const WrapperPoolStats stats = wrapper_pool_stats();
  return Py_BuildValue("{sKsKsKsKsi}", "rebound", static_cast<unsigned long long>(stats.rebound),
                       "fresh", static_cast<unsigned long long>(stats.fresh), "kept",
                       static_cast<unsigned long long>(stats.kept), "dropped",
                       static_cast<unsigned long long>(stats.dropped), "pooled", stats.pooled);
}

PyObject* py_set_direct_mode(PyObject*, PyObject* enabled) {
  return set_switch(g_direct_mode, "set_direct_mode", enabled);
}

PyObject* py_direct_mode(PyObject*, PyObject*) {
  return PyBool_FromLong(g_direct_mode.load(std::memory_order_relaxed));
}

PyObject* py_set_lane(PyObject*, PyObject* enabled) {
  return set_switch(g_lane, "set_lane", enabled);
}

PyObject* py_lane(PyObject*, PyObject*) {
  return PyBool_FromLong(g_lane.load(std::memory_order_relaxed));
}

PyObject* py_debug_lane_calls(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(g_lane_calls);
}

// --- What ran where (core/observe.h; the Python side: infiniops_codegen/observe.py)

namespace {
const observe::Control& observation() { return *linked_library().observation; }
}  // namespace

PyObject* py_observe_stats(PyObject*, PyObject*) {
  HANDLE_TH_ERRORS
  const std::vector<observe::Count> counts = observation().stats();
  PyObject* result = PyList_New(0);
  if (result == nullptr) return nullptr;
  for (const observe::Count& c : counts) {
    PyObject* row = Py_BuildValue("(sssK)", c.op.c_str(), c.implementation.c_str(),
                                  c.path.c_str(), static_cast<unsigned long long>(c.calls));
    if (row == nullptr || PyList_Append(result, row) < 0) {
      Py_XDECREF(row);
      Py_DECREF(result);
      return nullptr;
    }
    Py_DECREF(row);
  }
  return result;
  END_HANDLE_TH_ERRORS
}

PyObject* py_observe_reset_stats(PyObject*, PyObject* count) {
  const int on = PyObject_IsTrue(count);
  if (on < 0) return nullptr;
  observation().reset_stats(on != 0);
  Py_RETURN_NONE;
}

PyObject* py_observe_trace(PyObject*, PyObject* path) {
  HANDLE_TH_ERRORS
  if (path == Py_None) {
    observation().trace_to(nullptr, true);
  } else {
    PyObject* bytes = nullptr;
    if (!PyUnicode_FSConverter(path, &bytes)) return nullptr;
    std::string file(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    observation().trace_to(file.c_str(), false);
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* py_observe_end_trace(PyObject*, PyObject*) {
  HANDLE_TH_ERRORS
  const std::vector<std::string> lines = observation().end_trace();
  PyObject* result = PyList_New(static_cast<Py_ssize_t>(lines.size()));
  if (result == nullptr) return nullptr;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    PyObject* line = PyUnicode_FromStringAndSize(lines[k].data(),
                                                 static_cast<Py_ssize_t>(lines[k].size()));
    if (line == nullptr) {
      Py_DECREF(result);
      return nullptr;
    }
    PyList_SET_ITEM(result, static_cast<Py_ssize_t>(k), line);
  }
  return result;
  END_HANDLE_TH_ERRORS
}

PyObject* py_observe_require_native(PyObject*, PyObject* ops) {
  HANDLE_TH_ERRORS
  // True: every op; a list of names; None: off.
  if (ops == Py_True || ops == Py_None) {
    observation().require_native(ops == Py_True, {});
    Py_RETURN_NONE;
  }
  if (!PyList_Check(ops)) {
    PyErr_SetString(PyExc_TypeError, "_observe_require_native: True, None or a list of names");
    return nullptr;
  }
  std::vector<std::string> names;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ops); ++k) {
    const char* name = PyUnicode_AsUTF8(PyList_GET_ITEM(ops, k));
    if (name == nullptr) return nullptr;
    names.emplace_back(name);
  }
  observation().require_native(false, std::move(names));
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* py_observe_flags(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLong(observation().flags->load(std::memory_order_relaxed));
}

bool init_module(PyObject*) {
  // torch first: THPVariableClass must exist before any tensor check.
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return false;
  Py_DECREF(torch);
  for (int k = 0; k < 3; ++k) {
    if (g_implementation_names[k] == nullptr) {
      const std::string name(to_string(static_cast<Implementation>(k)));
      g_implementation_names[k] = PyUnicode_InternFromString(name.c_str());  // kept for good
      if (g_implementation_names[k] == nullptr) return false;
    }
  }
  return init_torch_function();
}

}  // namespace infini::ops::torch_bridge
