#pragma once
// C++ exceptions leaving a binding as the Python exception PyTorch raises
// for them. Below both the call skeleton (call.h) and __torch_function__
// (torch_function.h), which each translate what their calls throw. Only
// Python.h: the bindings TU stays free of torch's headers; the translation
// itself is in python_errors.cpp.

#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// Call inside `catch (...)`: sets the Python exception PyTorch would raise
// (c10::IndexError -> IndexError, ...; core errors likewise).
void raise_python_error(const Signature& sig) noexcept;

}  // namespace infini::ops::torch_bridge
