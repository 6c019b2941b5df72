// Dtypes and devices between the core and ATen (dtype_device.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/dtype_device.h"

#include <string>

#include "torch_tables.h"

namespace infini::ops::torch_bridge {

// The dtype and device mappings are the generated tables
// (generated/torch_tables.h, from infiniops_codegen/data/dtypes.yaml and
// platforms.yaml); these functions only add the errors.

c10::ScalarType to_aten(DataType dtype) {
  return tables::scalar_type(dtype, [dtype]() -> c10::ScalarType {
    throw ValueError("unknown core dtype " + std::to_string(static_cast<int>(dtype)));
  });
}

DataType from_aten(c10::ScalarType type) {
  return tables::data_type(type, [type]() -> DataType {
    throw TypeError(std::string("dtype ") + c10::toString(type) +
                    " is not supported by the library");
  });
}

// Several platforms' torch ports reuse one PyTorch device type (iluvatar and
// metax run as CUDA; cambricon, moore and ascend as PrivateUse1): a c10
// device type's tensors belong to the first platform of the table the build
// has among those that use it, else to its upstream platform (a CPU-only
// build still runs CUDA tensors through the torch fallback); see
// tables::device_type.
Device from_aten(c10::Device device) {
  const auto index = static_cast<int16_t>(device.has_index() ? device.index() : -1);
  const auto type = tables::device_type(device.type(), [device]() -> DeviceType {
    // RuntimeError, as PyTorch raises for a tensor on an unexpected device.
    throw Error("device type " + c10::DeviceTypeName(device.type(), true) +
                " is not supported by the library");
  });
  return Device{type, index};
}

c10::Device to_aten(Device device) {
  const auto type = tables::c10_device_type(device.type, [device]() -> c10::DeviceType {
    throw TypeError("device " + std::string(to_string(device.type)) +
                    " has no PyTorch device in this build");
  });
  return c10::Device(type, static_cast<c10::DeviceIndex>(device.index));
}

}  // namespace infini::ops::torch_bridge
