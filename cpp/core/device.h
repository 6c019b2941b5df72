#pragma once

#include <cstdint>
#include <string_view>

namespace infini::ops {

enum class DeviceType : int8_t {
  kCpu,
  kNvidia,
  kIluvatar,
  kMetax,
  kCambricon,
  kMoore,
  kAscend,
};

constexpr std::string_view to_string(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu:
      return "cpu";
    case DeviceType::kNvidia:
      return "nvidia";
    case DeviceType::kIluvatar:
      return "iluvatar";
    case DeviceType::kMetax:
      return "metax";
    case DeviceType::kCambricon:
      return "cambricon";
    case DeviceType::kMoore:
      return "moore";
    case DeviceType::kAscend:
      return "ascend";
  }
  return "unknown";
}

// A plain value (no string): building one per call costs nothing.
// index -1 means "the current device of that type", as in PyTorch.
struct Device {
  DeviceType type = DeviceType::kCpu;
  int16_t index = -1;

  friend constexpr bool operator==(const Device&, const Device&) = default;
};

}  // namespace infini::ops
