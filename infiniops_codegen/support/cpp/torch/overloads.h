#pragma once
// A module function with several signatures, as torch's Python functions
// have them (`torch.pow(Tensor, Tensor)`, `torch.pow(Tensor, Scalar)`, ...):
// the call goes to the first signature that takes its arguments, tried in
// torch's order with the checks of torch's argument parser, and from there
// to the binding of the op that serves it. Only Python.h: the bindings TU
// stays free of torch's headers.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>

namespace infini::ops::torch_bridge {

// What a parameter takes: torch's ParameterType, checked as
// FunctionParameter::check does (torch/csrc/utils/python_arg_parser.cpp).
enum class Match : uint8_t {
  kTensor,
  kScalar,
  kInt,
  kSymInt,  // an int, or any __index__ (checked by calling it, as torch does)
  kFloat,
  kBool,
  kStr,
  kDtype,
  kGenerator,
  kLayout,
  kDevice,
  kMemoryFormat,
  kDimname,
  kTensorList,
  kTensorOrTensorList,  // an out= tuple, or an op's own first output named out
  kIntList,
  kSymIntList,
  kFloatList,
  kScalarList,
  kBoolList,
  kDimnameList,
  kAny,
};

struct OverloadParam {
  const char* name;
  Match match;
  uint8_t size;  // N of `int[N]` (one int stands for N); 0 otherwise
  bool allow_none;
  bool has_default;  // may be left out
};

using Binding = PyObject* (*)(PyObject* module, PyObject* const* args, Py_ssize_t nargs,
                              PyObject* kwnames);

struct Overload {
  const char* text;  // torch's spelling of the signature, for errors
  const OverloadParam* params;
  int num_params;
  int num_positional;
  bool numbers_as_tensors;  // a Tensor parameter takes a Python number
  Binding binding;          // the serving op's binding; null: not in this build
  const char* aten;         // the ATen overload it stands for
  PyObject** keys;          // interned names, filled on first use (GIL held)
  const char* remedy;       // null binding: what would serve it, or why none can
};

struct OverloadedFunction {
  const char* name;
  const Overload* overloads;
  int count;
};

// Calls the binding of the first overload that takes the arguments; a
// TypeError listing the signatures when none does (torch's message), a
// NotImplementedError when the one that does is not in this build.
PyObject* call_overloaded(const OverloadedFunction& f, PyObject* module,
                          PyObject* const* args, Py_ssize_t nargs,
                          PyObject* kwnames) noexcept;

}  // namespace infini::ops::torch_bridge
