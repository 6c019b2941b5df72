// The torch side of the sim backend (PrivateUse1, renamed "sim"), shaped
// like a vendor port's stream API (c10::cuda::CUDAStream, torch_npu).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include "infini_sim/runtime.h"

namespace infini_sim {

// A c10::Stream of DeviceType::PrivateUse1 with its raw runtime handle.
// Stream ids: 0 is a device's default stream, any other id is the handle.
class SimStream {
 public:
  explicit SimStream(c10::Stream stream);
  simStream_t stream() const;
  c10::DeviceIndex device_index() const { return stream_.device_index(); }
  c10::Device device() const { return stream_.device(); }
  operator c10::Stream() const { return stream_; }
  c10::Stream unwrap() const { return stream_; }
  bool operator==(const SimStream& other) const {
    return stream_ == other.stream_;
  }
  bool operator!=(const SimStream& other) const { return !(*this == other); }
  void synchronize() const { stream_synchronize(stream()); }
  bool query() const { return stream_query(stream()); }

 private:
  c10::Stream stream_;
};

// Wraps a runtime handle (e.g. one that crossed a C API) as a torch stream.
SimStream getStreamFromExternal(simStream_t stream, c10::DeviceIndex index);
// -1: the current device. Current streams are per thread, as CUDA's.
SimStream getCurrentSimStream(c10::DeviceIndex index = -1);
SimStream getDefaultSimStream(c10::DeviceIndex index = -1);
SimStream getStreamFromPool(bool high_priority = false,
                            c10::DeviceIndex index = -1);
void setCurrentSimStream(SimStream stream);

// Makes the stream current and its device current; restores both (like
// c10::cuda::CUDAStreamGuard).
class SimStreamGuard {
 public:
  explicit SimStreamGuard(SimStream stream);
  ~SimStreamGuard();
  SimStreamGuard(const SimStreamGuard&) = delete;
  SimStreamGuard& operator=(const SimStreamGuard&) = delete;

 private:
  int original_device_;
  c10::Stream original_stream_;  // of the new stream's device
};

// The CPU-fallback's count of an op is by its schema name, e.g. "aten::add.out".
}  // namespace infini_sim
