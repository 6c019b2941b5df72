#pragma once
// str arguments of the generated bindings (implementation= among them) and
// torch.dtype ones, Python -> core (their kinds: arg_kinds.h). Only Python.h
// and the core; the converters are in unpack_str_dtype.cpp.

#include <string_view>

#include "core/core.h"
#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// A view into the Python str, which the caller's arguments keep alive.
std::string_view unpack_str(PyObject* obj, const Signature& sig, int i);
DataType unpack_dtype(PyObject* obj, const Signature& sig, int i);
Implementation unpack_implementation(PyObject* obj, const Signature& sig, int i);
// The names of the implementations (to_string), interned, by enumerator
// (init_module).
extern PyObject* g_implementation_names[3];

}  // namespace infini::ops::torch_bridge
