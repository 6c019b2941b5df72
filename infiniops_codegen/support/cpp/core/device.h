#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_DEVICE_H_
#define INFINI_OPS_CORE_DEVICE_H_

#include <cstdint>

// DeviceType (one per platform), to_string(DeviceType) and kBuiltPlatforms
// (the platforms a build has) are generated from the platform table
// (infiniops_codegen/data/platforms.yaml) into generated/platform_table.h:
// add a platform there (docs/adding-a-platform.md), not here. Compiling the
// core needs the generated directory on the include path (-I generated).
#include "platform_table.h"

namespace infini::ops {

// A plain value (no string): building one per call costs nothing.
// index -1 means "the current device of that type", as in PyTorch.
struct Device {
  DeviceType type = DeviceType::kCpu;
  int16_t index = -1;

  friend constexpr bool operator==(const Device&, const Device&) = default;
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_DEVICE_H_
