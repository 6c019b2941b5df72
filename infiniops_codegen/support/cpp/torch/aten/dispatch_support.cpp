// What the generated dispatch asks of the torch bridge
// (runtime/dispatch_support.h): whether a native kernel may run now, and the
// profiler's record of a call.
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "runtime/dispatch_support.h"

#include <ATen/record_function.h>

#include <string_view>
#include <utility>

#include "torch/aten/handles.h"

namespace infini::ops::torch_fallback {

bool native_context() noexcept { return !torch_bridge::framework_mode_active(); }

ProfileScope::ProfileScope(const char* name) {
  auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION);
  if (callbacks.has_value()) [[unlikely]] {
    auto* record = new at::RecordFunction(std::move(*callbacks));
    record->before(std::string_view(name));
    record_ = record;
  }
}

ProfileScope::~ProfileScope() { delete static_cast<at::RecordFunction*>(record_); }

}  // namespace infini::ops::torch_fallback
