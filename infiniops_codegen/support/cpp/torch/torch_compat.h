#pragma once
// The one place where the bridge meets torch internals that differ between
// the releases it supports (2.11 to 2.15). Each difference is one function
// here, guarded by TORCH_VERSION_MAJOR/MINOR and a comment naming the
// release that changed it; no other file of the bridge tests the version.
// docs/torch-releases.md lists what the bridge touches and these guards.
//
// Only what a release changed belongs here. Internals used the same way in
// every supported release stay where they are used (the list is in the doc).

#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/headeronly/version.h>  // TORCH_VERSION_MAJOR/MINOR

// True when the torch being compiled against is major.minor or newer.
#define INFINI_OPS_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||             \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !INFINI_OPS_TORCH_AT_LEAST(2, 11)
#error "torch older than 2.11: the torch bridge supports torch 2.11 to 2.15 (docs/torch-releases.md)"
#endif

namespace infini::ops::torch_bridge::compat {

// torch._C._skip_one_hop_torch_function() sets a thread-local flag that the
// next __torch_function__ check consumes (it then says no). torch 2.13 added
// both (at::impl::PythonTorchFunctionTLS::exchange_skip_next); 2.11 and 2.12
// have neither, so nothing can ask to skip there.
inline bool consume_skip_next_torch_function() {
#if INFINI_OPS_TORCH_AT_LEAST(2, 13)
  return at::impl::PythonTorchFunctionTLS::exchange_skip_next(false);
#else
  return false;
#endif
}

}  // namespace infini::ops::torch_bridge::compat
