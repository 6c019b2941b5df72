#pragma once
// What both programs share: tensors over at::Tensor storage, as a C++
// caller holding raw buffers would make them, and the allocation counter.

#include <infiniops/ops.h>
#include <infiniops/torch/aten_convert.h>

#include <ATen/core/Tensor.h>

#include <span>

extern "C" {
void alloc_counter_start(void);
long alloc_counter_stop(void);
}

namespace bench {

namespace io = ::infini::ops;
namespace tb = ::infini::ops::torch_bridge;

// A core Tensor over t's memory and geometry, without a handle: the
// from_blob path, as for a C++ caller's own buffer.
inline io::Tensor raw(const at::Tensor& t) {
  return io::Tensor(t.data_ptr(), std::span<const int64_t>(t.sizes().data(), t.sizes().size()),
                    std::span<const int64_t>(t.strides().data(), t.strides().size()),
                    tb::from_aten(t.scalar_type()), io::Device{});
}

// The same with an owning handle: the fallback reuses t itself.
inline io::Tensor handle(const at::Tensor& t) { return tb::from_aten(t); }

}  // namespace bench
