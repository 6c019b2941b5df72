// __torch_function__ for the generated bindings (see torch_function.h):
// which arguments override it, and the hand-over to torch's own
// handle_torch_function with the matching torch.ops.aten overload.
#include "torch/torch_function.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/python_arg_parser.h>

#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "torch/python_errors.h"
#include "torch/torch_compat.h"

namespace infini::ops::torch_bridge {

namespace {

// torch._C._disabled_torch_function_impl: a __torch_function__ equal to it
// opts out of the protocol (set at init_module).
PyObject* g_disabled_torch_function = nullptr;

// torch's check_has_torch_function for one argument, modes aside.
bool overrides_torch_function(PyObject* obj) {
  if (obj == nullptr || obj == Py_None) return false;
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == reinterpret_cast<PyTypeObject*>(THPVariableClass) || tp == &PyBool_Type ||
      tp == &PyLong_Type || tp == &PyFloat_Type || tp == &PyComplex_Type ||
      tp == &PyList_Type || tp == &PyTuple_Type || tp == &PyDict_Type ||
      tp == &PySet_Type || tp == &PyFrozenSet_Type || tp == &PyUnicode_Type ||
      tp == &PyBytes_Type || tp == &PySlice_Type || tp == Py_TYPE(Py_None) ||
      tp == Py_TYPE(Py_Ellipsis) || tp == Py_TYPE(Py_NotImplemented)) {
    return false;
  }
  PyObject* attr = PyObject_GetAttrString(obj, "__torch_function__");
  if (attr == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool overrides = attr != g_disabled_torch_function;
  Py_DECREF(attr);
  return overrides;
}

// Calls f(obj) for every argument of a tensor or tensor-list parameter.
template <class F>
void for_each_tensor_argument(const Signature& sig, PyObject* const* slots, F&& f) {
  for (int p = 0; p < sig.num_params; ++p) {
    PyObject* obj = slots[p];
    if (obj == nullptr) continue;
    if (sig.tensor_params >> p & 1) {
      f(obj);
    } else if (sig.tensor_list_params >> p & 1) {
      if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyObject** items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n; ++k) f(items[k]);
      } else {
        f(obj);  // a tensor-like object standing for the whole list
      }
    }
  }
}

// torch's ordering of overloaded arguments: one per type, a subclass before
// its superclasses, otherwise in argument order.
void append_overloaded(std::vector<PyObject*>& overloaded, PyObject* obj) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  for (PyObject* seen : overloaded) {
    if (reinterpret_cast<PyObject*>(Py_TYPE(seen)) == type) return;
  }
  auto at = overloaded.end();
  for (auto it = overloaded.begin(); it != overloaded.end(); ++it) {
    if (PyObject_IsSubclass(type, reinterpret_cast<PyObject*>(Py_TYPE(*it))) == 1) {
      at = it;
      break;
    }
  }
  overloaded.insert(at, obj);
}

class PyRef {
 public:
  explicit PyRef(PyObject* obj = nullptr) noexcept : obj_(obj) {}
  ~PyRef() { Py_XDECREF(obj_); }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  PyObject* get() const noexcept { return obj_; }
  explicit operator bool() const noexcept { return obj_ != nullptr; }
  void reset(PyObject* obj) noexcept {
    Py_XDECREF(obj_);
    obj_ = obj;
  }

 private:
  PyObject* obj_;
};

// torch.ops.aten.<name>.<overload>, resolved once per op: the out=
// overload, or the functional one for a call that leaves the outputs out.
PyObject* aten_overload(const Signature& sig, bool functional) {
  PyObject** cache = functional ? sig.functional_torch_function : sig.torch_function;
  if (*cache != nullptr) return *cache;
  const std::string_view full(functional ? sig.aten_functional : sig.aten);
  const auto dot = full.find('.');
  const std::string name(full.substr(0, dot));
  const std::string overload(dot == std::string_view::npos ? "default" : full.substr(dot + 1));
  PyRef torch(PyImport_ImportModule("torch"));
  PyRef ops(torch ? PyObject_GetAttrString(torch.get(), "ops") : nullptr);
  PyRef aten(ops ? PyObject_GetAttrString(ops.get(), "aten") : nullptr);
  PyRef packet(aten ? PyObject_GetAttrString(aten.get(), name.c_str()) : nullptr);
  PyObject* func = packet ? PyObject_GetAttrString(packet.get(), overload.c_str()) : nullptr;
  *cache = func;  // kept for the life of the process
  return func;
}

}  // namespace

// The list part of torch_function_wanted: any element not exactly a tensor.
Special torch_function_in_lists(const Signature& sig, PyObject* const* slots) {
  for (uint64_t mask = sig.tensor_list_params; mask != 0; mask &= mask - 1) {
    PyObject* obj = slots[__builtin_ctzll(mask)];
    if (obj == nullptr) continue;
    if (!PyList_Check(obj) && !PyTuple_Check(obj)) return torch_function_slow(sig, slots);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t k = 0, n = PySequence_Fast_GET_SIZE(obj); k < n; ++k) {
      if (Py_TYPE(items[k]) != reinterpret_cast<PyTypeObject*>(THPVariableClass) &&
          items[k] != Py_None) {
        return torch_function_slow(sig, slots);
      }
    }
  }
  return Special::kNone;
}

Special torch_function_slow(const Signature& sig, PyObject* const* slots) {
  bool wanted = at::impl::torch_function_mode_enabled();
  if (!wanted && at::impl::PythonTorchFunctionTLS::get_disabled_state() ==
                     at::impl::TorchFunctionDisabledState::ENABLED) {
    for_each_tensor_argument(sig, slots, [&](PyObject* obj) {
      wanted = wanted || overrides_torch_function(obj);
    });
  }
  // torch._C._skip_one_hop_torch_function(): the next check says no.
  wanted = wanted && !compat::consume_skip_next_torch_function();
  bool python_key = false;
  for_each_tensor_argument(sig, slots, [&](PyObject* obj) {
    python_key = python_key ||
                 (THPVariable_Check(obj) &&
                  THPVariable_Unpack(obj).key_set().has(c10::DispatchKey::Python));
  });
  if (wanted) return python_key ? Special::kTracedTorchFunction : Special::kTorchFunction;
  return python_key ? Special::kDispatcherOp : Special::kNone;
}

namespace {

// torch.ops.<module>.<base>.<overload> for this call, resolved once per
// overload (the GIL held). Looking up the module's namespace registers its
// ops the first time (infiniops_codegen.torch_ops). Null with no error set
// where the module has no such namespace (loaded without
// infiniops_codegen.runtime).
PyObject* own_overload(const Signature& sig, PyObject* module, bool functional) {
  static std::unordered_map<std::string, PyObject*> cache;
  const char* ns = PyModule_GetName(module);
  if (ns == nullptr) return nullptr;
  std::string full = sig.aten != nullptr ? (functional ? sig.aten_functional : sig.aten)
                                         : std::string(sig.op) + (functional ? "" : ".out");
  const std::string key = std::string(ns) + "::" + full;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const auto dot = full.find('.');
  const std::string name = full.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "default" : full.substr(dot + 1);
  PyRef torch(PyImport_ImportModule("torch"));
  PyRef ops(torch ? PyObject_GetAttrString(torch.get(), "ops") : nullptr);
  PyRef space(ops ? PyObject_GetAttrString(ops.get(), ns) : nullptr);
  PyRef packet(space ? PyObject_GetAttrString(space.get(), name.c_str()) : nullptr);
  PyObject* func = packet ? PyObject_GetAttrString(packet.get(), overload.c_str()) : nullptr;
  if (func == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  cache.emplace(key, func);  // kept for the life of the process
  return func;
}

// The module's dispatcher overload for this call and its arguments under
// their schema names (hidden ones as None). Null with no error set where
// the call takes the module's own path (implementation= or stream= given,
// no functional overload for a call without outputs, no namespace); null
// with an error set on failure.
PyObject* own_call(const Signature& sig, PyObject* module, PyObject* const* slots,
                   PyRef& call_args, PyRef& call_kwargs) {
  const bool functional = outs_absent(sig, slots);
  if (slots[sig.num_params - 2] != nullptr || slots[sig.num_params - 1] != nullptr ||
      (functional && sig.aten != nullptr && sig.aten_functional == nullptr)) {
    return nullptr;
  }
  PyObject* func = own_overload(sig, module, functional);
  if (func == nullptr) return nullptr;
  const char* const* names = sig.schema_names != nullptr ? sig.schema_names : sig.names;
  int positional = 0;
  const int leading = sig.aten != nullptr ? sig.aten_positional : sig.num_positional;
  while (positional < leading && slots[positional] != nullptr) ++positional;
  call_args.reset(PyTuple_New(positional));
  call_kwargs.reset(PyDict_New());
  if (!call_args || !call_kwargs) return nullptr;
  for (int p = 0; p < positional; ++p) {
    Py_INCREF(slots[p]);
    PyTuple_SET_ITEM(call_args.get(), p, slots[p]);
  }
  for (int p = positional; p < sig.num_params - 2; ++p) {
    if (slots[p] != nullptr && !(functional && is_output_param(sig, p)) &&
        PyDict_SetItemString(call_kwargs.get(), names[p], slots[p]) < 0) {
      return nullptr;
    }
  }
  for (const char* const* n = sig.aten_none; n != nullptr && *n != nullptr; ++n) {
    if (PyDict_SetItemString(call_kwargs.get(), *n, Py_None) < 0) return nullptr;
  }
  return func;
}

}  // namespace

PyObject* dispatcher_op(const Signature& sig, PyObject* module, PyObject* const* args,
                        Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots) {
  try {
    PyRef call_args;
    PyRef call_kwargs;
    PyObject* func = own_call(sig, module, slots, call_args, call_kwargs);
    if (func == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      Py_RETURN_NOTIMPLEMENTED;
    }
    return PyObject_Call(func, call_args.get(), call_kwargs.get());
  } catch (...) {
    raise_python_error(sig);
    return nullptr;
  }
}

PyObject* torch_function(const Signature& sig, PyObject* module, PyObject* const* args,
                         Py_ssize_t nargs, PyObject* kwnames, PyObject* const* slots,
                         bool traced) {
  try {
    std::vector<PyObject*> overloaded;
    if (at::impl::PythonTorchFunctionTLS::get_disabled_state() ==
        at::impl::TorchFunctionDisabledState::ENABLED) {
      for_each_tensor_argument(sig, slots, [&](PyObject* obj) {
        if (overrides_torch_function(obj)) append_overloaded(overloaded, obj);
      });
    }
    PyRef func;
    PyRef call_args;
    PyRef call_kwargs(PyDict_New());
    std::string name;
    const char* module_name = nullptr;
    PyObject* own = traced ? own_call(sig, module, slots, call_args, call_kwargs) : nullptr;
    if (own != nullptr) {
      // Traced tensors (fake, functional): the module's dispatcher op, which
      // the tracer records (docs/compile.md).
      Py_INCREF(own);
      func.reset(own);
      name = sig.op;
      module_name = "torch.ops";
    } else if (PyErr_Occurred()) {
      return nullptr;
    } else if (call_kwargs && sig.aten != nullptr) {
      // The ATen overload with its schema's argument names; implementation=
      // and stream= belong to this library, not to ATen.
      const bool functional = sig.aten_functional != nullptr && outs_absent(sig, slots);
      PyObject* overload = aten_overload(sig, functional);
      if (overload == nullptr) return nullptr;
      Py_INCREF(overload);
      func.reset(overload);
      int positional = 0;
      while (positional < sig.aten_positional && slots[positional] != nullptr) ++positional;
      call_args.reset(PyTuple_New(positional));
      for (int p = 0; call_args && p < positional; ++p) {
        Py_INCREF(slots[p]);
        PyTuple_SET_ITEM(call_args.get(), p, slots[p]);
      }
      for (int p = positional; call_args && p < sig.num_params - 2; ++p) {
        if (slots[p] != nullptr && !(functional && is_output_param(sig, p)) &&
            PyDict_SetItemString(call_kwargs.get(), sig.schema_names[p], slots[p]) < 0) {
          return nullptr;
        }
      }
      for (const char* const* n = sig.aten_none; n != nullptr && *n != nullptr; ++n) {
        if (PyDict_SetItemString(call_kwargs.get(), *n, Py_None) < 0) return nullptr;
      }
      name = functional ? sig.aten_functional : sig.aten;
      module_name = "torch.ops.aten";
    } else if (call_kwargs) {
      // A composite: the module's own function, called as it was.
      func.reset(PyObject_GetAttrString(module, sig.op));
      call_args.reset(PyTuple_New(nargs));
      for (Py_ssize_t k = 0; call_args && k < nargs; ++k) {
        Py_INCREF(args[k]);
        PyTuple_SET_ITEM(call_args.get(), k, args[k]);
      }
      const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t k = 0; k < nkw; ++k) {
        if (PyDict_SetItem(call_kwargs.get(), PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) {
          return nullptr;
        }
      }
      name = sig.op;
      module_name = PyModule_GetName(module);
      if (module_name == nullptr) return nullptr;
    }
    if (!func || !call_args || !call_kwargs) return nullptr;
    return torch::handle_torch_function_no_python_arg_parser(
        overloaded, call_args.get(), call_kwargs.get(), name.c_str(), func.get(), module_name);
  } catch (...) {
    raise_python_error(sig);
    return nullptr;
  }
}

bool init_torch_function() {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return false;
  PyObject* c = PyObject_GetAttrString(torch, "_C");
  Py_DECREF(torch);
  if (c == nullptr) return false;
  g_disabled_torch_function = PyObject_GetAttrString(c, "_disabled_torch_function_impl");
  Py_DECREF(c);
  return g_disabled_torch_function != nullptr;  // kept for the process
}

}  // namespace infini::ops::torch_bridge
