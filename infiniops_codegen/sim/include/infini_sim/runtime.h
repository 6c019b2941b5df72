// The simulated accelerator's runtime (the "driver" of the sim backend).
//
// Torch-free on purpose: kernels built by compilers that refuse torch's
// headers include this header only, as CUDA kernels include cuda_runtime.h.
// Device memory is host memory mapped PROT_NONE except while the runtime's
// own copies or a kernel launched through it run, so a host dereference of a
// device pointer faults as it would on real hardware.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace infini_sim {

struct StreamObject;  // opaque
using simStream_t = StreamObject*;
struct EventObject;  // opaque
using simEvent_t = EventObject*;

constexpr int kDeviceCount = 2;

// ---- devices (the current device is per thread, like cudaGetDevice) ----
int device_count();
int current_device();
// Throws std::invalid_argument for an index outside [0, kDeviceCount).
void set_device(int index);
// Sets the device and returns the previous one (one call, for guards).
int exchange_device(int index);

// ---- streams: each has one worker thread running its work in order ----
simStream_t default_stream(int device);
// A new stream with its own worker (like cudaStreamCreate); never destroyed.
simStream_t create_stream(int device);
// One of a small fixed pool per device, round robin (like CUDA's pool).
simStream_t pool_stream(int device);
int stream_device(simStream_t stream);
// 0 for a device's default stream, distinct non-zero ids otherwise.
int64_t stream_id(simStream_t stream);
// Whether `stream` is a stream this runtime made (for handles from Python).
bool is_stream(const void* stream);

// Enqueues `fn` on the stream's worker (asynchronous, in order). While fn
// runs the device blocks holding the `touched` pointers are readable and
// writable. Throws std::runtime_error when the stream's device is not the
// calling thread's current device (as a CUDA launch fails). In the no-work
// mode it returns at once without running fn.
void launch(simStream_t stream, std::initializer_list<const void*> touched,
            std::function<void()> fn);
void launch(simStream_t stream, const std::vector<const void*>& touched,
            std::function<void()> fn);
// As launch, but also runs in the no-work mode: the backend's own copies,
// which must happen whatever the mode.
void enqueue_copy(simStream_t stream, const std::vector<const void*>& touched,
                  std::function<void()> fn);
// A kernel that only waits: makes misordered work observable in tests.
void launch_sleep(simStream_t stream, double milliseconds);
// A kernel that fails with `message` (tests the asynchronous error path).
void launch_error(simStream_t stream, const std::string& message);

// Waits for the stream's work; rethrows a failed kernel's error as
// std::runtime_error. Sticky: every later synchronize of that stream throws
// again, and its later kernels are skipped, until clear_error.
void stream_synchronize(simStream_t stream);
void device_synchronize(int device);  // every stream of the device
bool stream_query(simStream_t stream);  // true when idle
void stream_clear_error(simStream_t stream);
void clear_errors();  // every stream's

// ---- device memory ----
// Page-granular blocks (mmap), PROT_NONE except while accessed. Returns
// nullptr for 0 bytes. Throws std::bad_alloc when the mapping fails.
void* device_malloc(int device, size_t bytes);
// Unmaps at once, or when the last pending kernel that touches it finishes.
void device_free(void* ptr);
// The device of any address inside a live block, -1 for other memory.
int device_of(const void* ptr);

// RAII: the blocks holding `ptrs` readable and writable while alive
// (reference-counted per block; pointers outside device memory are ignored).
class DeviceAccess {
 public:
  explicit DeviceAccess(std::initializer_list<const void*> ptrs);
  explicit DeviceAccess(const std::vector<const void*>& ptrs);
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  std::vector<void*> blocks_;
};

// Copies. Host<->device ones wait for the stream's work first and return
// when done (synchronous for the caller); device->device is asynchronous on
// the stream, as cudaMemcpyAsync.
void memcpy_host_to_device(void* dst, const void* src, size_t n,
                           simStream_t stream);
void memcpy_device_to_host(void* dst, const void* src, size_t n,
                           simStream_t stream);
void memcpy_device_to_device(void* dst, const void* src, size_t n,
                             simStream_t stream);

// ---- events ----
simEvent_t event_create();
void event_destroy(simEvent_t event);
// Whether `event` is a live event of this runtime (for handles from Python).
bool is_event(const void* event);
void event_record(simEvent_t event, simStream_t stream);
// The stream's later work waits for the event's last record (no-op when the
// event was never recorded, as in CUDA).
void stream_wait_event(simStream_t stream, simEvent_t event);
bool event_query(simEvent_t event);
void event_synchronize(simEvent_t event);
// Milliseconds between two completed records; throws otherwise.
double event_elapsed_ms(simEvent_t start, simEvent_t end);

// ---- counters ----
struct Stats {
  uint64_t device_to_host_copies = 0;
  uint64_t host_to_device_copies = 0;
  uint64_t device_to_device_copies = 0;
  uint64_t kernel_launches = 0;
  uint64_t fallback_runs = 0;
  std::map<std::string, uint64_t> fallback_ops;
};
Stats stats();
void reset_stats();
void count_fallback(const std::string& op_name);
// While alive on this thread, copies are not counted as device<->host ones
// (the torch side's CPU fallback moves tensors; it has its own counter).
class UncountedCopies {
 public:
  UncountedCopies();
  ~UncountedCopies();

 private:
  bool previous_;
};

// ---- modes ----
// The no-work mode (host overhead measurements): launches return at once.
bool null_kernels();
void set_null_kernels(bool on);
// False when the environment has INFINI_SIM_PROTECT=0 (sanitizer builds):
// blocks then stay readable and writable.
bool protection_enabled();
// True in a child forked after any stream's worker started: the workers did
// not survive the fork, so the child's launches throw (as CUDA refuses a
// forked child; use the spawn start method).
bool in_bad_fork();

}  // namespace infini_sim
