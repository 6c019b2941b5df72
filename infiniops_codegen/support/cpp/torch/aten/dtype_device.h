#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_DTYPE_DEVICE_H_
#define INFINI_OPS_TORCH_ATEN_DTYPE_DEVICE_H_
// Core dtypes and devices as ATen's and back, through the generated tables
// (generated/torch_tables.h); the conversions only add the errors. Part of
// the library's ATen conversions (torch/aten_convert.h).

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "core/core.h"

namespace infini::ops::torch_bridge {

// Core -> ATen (TypeError or ValueError when the build has no match).
c10::ScalarType to_aten(DataType dtype);
c10::Device to_aten(Device device);

// ATen -> core.
DataType from_aten(c10::ScalarType type);  // TypeError when unsupported
Device from_aten(c10::Device device);      // Error (RuntimeError) when unsupported

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_DTYPE_DEVICE_H_
