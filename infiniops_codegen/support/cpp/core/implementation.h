#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_IMPLEMENTATION_H_
#define INFINI_OPS_CORE_IMPLEMENTATION_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace infini::ops {

// Which implementation an operator call should use. kDefault lets dispatch
// choose (native kernel when it supports the inputs, else torch).
enum class Implementation : int8_t { kDefault, kNative, kTorch };

constexpr std::string_view to_string(Implementation impl) {
  switch (impl) {
    case Implementation::kDefault:
      return "default";
    case Implementation::kNative:
      return "native";
    case Implementation::kTorch:
      return "torch";
  }
  return "unknown";
}

// Exact, lower-case names only; anything else is nullopt so callers can report
// the bad value themselves.
constexpr std::optional<Implementation> parse_implementation(
    std::string_view name) {
  if (name == "default") return Implementation::kDefault;
  if (name == "native") return Implementation::kNative;
  if (name == "torch") return Implementation::kTorch;
  return std::nullopt;
}

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_IMPLEMENTATION_H_
