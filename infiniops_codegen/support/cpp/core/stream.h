#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_STREAM_H_
#define INFINI_OPS_CORE_STREAM_H_

namespace infini::ops {

// A native stream of the device an op's tensors are on (cudaStream_t,
// musaStream_t, aclrtStream, ...), held as an opaque pointer so the core
// stays free of vendor headers. Default-constructed: no stream given, i.e.
// the framework's current stream of that device. A given null handle is a
// real stream (CUDA's default stream). Devices without streams (the CPU)
// take only "no stream".
struct Stream {
  void* handle = nullptr;
  bool given = false;

  static constexpr Stream of(void* native_handle) { return Stream{native_handle, true}; }

  explicit constexpr operator bool() const { return given; }
  friend constexpr bool operator==(const Stream&, const Stream&) = default;
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_STREAM_H_
