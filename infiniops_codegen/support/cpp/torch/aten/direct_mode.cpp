// Direct kernel mode's switch and context check (direct_mode.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/direct_mode.h"

#include <ATen/record_function.h>

#include "torch/aten/handles.h"

namespace infini::ops::torch_bridge {

std::atomic<bool> g_direct_mode{true};

bool direct_cpu_context() {
  // A framework mode needs the dispatcher; so does a RecordFunction observer
  // (torch.profiler): the dispatcher records the op, with the name, inputs
  // and sequence number torch's own call would have.
  return !framework_mode_active() &&
         !at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION).has_value();
}

}  // namespace infini::ops::torch_bridge
