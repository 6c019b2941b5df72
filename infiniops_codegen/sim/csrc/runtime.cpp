// The sim runtime: devices, streams with worker threads, protected device
// memory, events, counters. See include/infini_sim/runtime.h.
#include "infini_sim/runtime.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace infini_sim {

namespace {

// Globals are leaked on purpose: worker threads may still run while static
// destructors do at process exit.
struct Block {
  uintptr_t base;
  size_t mapped;  // bytes, whole pages
  int device;
  int access = 0;   // DeviceAccess holders and running kernels
  int pending = 0;  // enqueued kernels that touch it and have not finished
  bool freed = false;
};

std::mutex& mem_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
// base -> block, for device_of on any inner address.
std::map<uintptr_t, Block*>& blocks() {
  static auto* b = new std::map<uintptr_t, Block*>;
  return *b;
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool read_protection_env() {
  const char* env = std::getenv("INFINI_SIM_PROTECT");
  return !(env && std::strcmp(env, "0") == 0);
}

std::atomic<bool> g_null_kernels{false};

// Counters: atomics for the hot ones, a mutex for the per-op map.
std::atomic<uint64_t> g_d2h{0}, g_h2d{0}, g_d2d{0}, g_launches{0},
    g_fallbacks{0};
std::mutex& fallback_ops_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<std::string, uint64_t>& fallback_ops() {
  static auto* m = new std::map<std::string, uint64_t>;
  return *m;
}
thread_local bool t_uncounted = false;

thread_local int t_device = 0;

std::atomic<bool> g_workers_started{false};
std::atomic<bool> g_bad_fork{false};

void on_fork_child() {
  if (g_workers_started.load()) {
    g_bad_fork.store(true);
  }
}

[[maybe_unused]] const bool g_atfork_registered = [] {
  pthread_atfork(nullptr, nullptr, &on_fork_child);
  return true;
}();

void check_index(int index) {
  if (index < 0 || index >= kDeviceCount) {
    throw std::invalid_argument(
        "infini_sim: invalid device index " + std::to_string(index) +
        " (the simulator has " + std::to_string(kDeviceCount) + " devices)");
  }
}

Block* find_block_locked(const void* ptr) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  auto& map = blocks();
  auto it = map.upper_bound(p);
  if (it == map.begin()) {
    return nullptr;
  }
  --it;
  Block* b = it->second;
  return p < b->base + b->mapped ? b : nullptr;
}

void protect(Block* b, int prot) {
  if (mprotect(reinterpret_cast<void*>(b->base), b->mapped, prot) != 0) {
    throw std::runtime_error(std::string("infini_sim: mprotect failed: ") +
                             std::strerror(errno));
  }
}

// Caller holds mem_mutex: the count and the page state change together, or
// a release on one thread could revoke access another thread just granted.
void acquire_locked(Block* b) {
  if (b->access++ == 0 && protection_enabled()) {
    protect(b, PROT_READ | PROT_WRITE);
  }
}

void release_locked(Block* b) {
  if (--b->access == 0 && protection_enabled() && !b->freed) {
    protect(b, PROT_NONE);
  }
}

void unmap_locked(Block* b) {
  munmap(reinterpret_cast<void*>(b->base), b->mapped);
  delete b;
}

void release_and_maybe_unmap(const std::vector<Block*>& held, bool pending) {
  std::lock_guard<std::mutex> lock(mem_mutex());
  for (Block* b : held) {
    if (pending) {
      --b->pending;
    }
    release_locked(b);
    if (b->freed && b->pending == 0 && b->access == 0) {
      unmap_locked(b);
    }
  }
}

std::vector<Block*> lookup_blocks(const void* const* ptrs, size_t n) {
  std::vector<Block*> out;
  for (size_t i = 0; i < n; ++i) {
    Block* b = ptrs[i] ? find_block_locked(ptrs[i]) : nullptr;
    if (b) {
      bool seen = false;
      for (Block* o : out) {
        seen = seen || o == b;
      }
      if (!seen) {
        out.push_back(b);
      }
    }
  }
  return out;
}

}  // namespace

// ---- streams ----

struct Marker {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::chrono::steady_clock::time_point time;
};

struct EventObject {
  std::mutex m;
  std::shared_ptr<Marker> marker;  // the last record's
};

struct Task {
  std::function<void()> fn;
  std::vector<Block*> blocks;  // acquired while fn runs
  bool kernel;                 // skipped after an error; runtime tasks are not
};

struct StreamObject {
  int device;
  int64_t id;
  std::mutex m;
  std::condition_variable work_cv, done_cv;
  std::deque<Task> queue;
  uint64_t submitted = 0, completed = 0;
  std::string error;  // non-empty: a kernel failed (sticky)
  bool started = false;

  void run() {
    t_device = device;
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(m);
        work_cv.wait(lock, [&] { return !queue.empty(); });
        task = std::move(queue.front());
        queue.pop_front();
      }
      bool skip;
      {
        std::lock_guard<std::mutex> lock(m);
        skip = task.kernel && !error.empty();
      }
      std::string failure;
      if (!skip) {
        try {
          {
            std::lock_guard<std::mutex> lock(mem_mutex());
            for (Block* b : task.blocks) {
              acquire_locked(b);
            }
          }
          task.fn();
        } catch (const std::exception& e) {
          failure = e.what();
          if (failure.empty()) {
            failure = "unknown error";
          }
        } catch (...) {
          failure = "unknown error";
        }
      } else {
        std::lock_guard<std::mutex> lock(mem_mutex());
        for (Block* b : task.blocks) {
          acquire_locked(b);  // balanced by the release below
        }
      }
      task.fn = nullptr;  // drop captures before reporting completion
      release_and_maybe_unmap(task.blocks, true);
      {
        std::lock_guard<std::mutex> lock(m);
        if (!failure.empty() && error.empty()) {
          error = failure;
        }
        ++completed;
      }
      done_cv.notify_all();
    }
  }

  void push(Task task) {
    if (g_bad_fork.load(std::memory_order_relaxed)) {
      throw std::runtime_error(
          "infini_sim: cannot use the sim device in a process forked after "
          "its streams started; use the 'spawn' start method");
    }
    {
      std::lock_guard<std::mutex> lock(m);
      if (!started) {
        started = true;
        g_workers_started.store(true);
        std::thread([this] { run(); }).detach();
      }
      queue.push_back(std::move(task));
      ++submitted;
    }
    work_cv.notify_one();
  }
};

namespace {

constexpr int kPoolSize = 4;

struct DeviceStreams {
  std::mutex m;
  StreamObject* default_stream = nullptr;
  std::vector<StreamObject*> all;  // every stream of the device, in order
  StreamObject* pool[kPoolSize] = {};
  std::atomic<unsigned> next_pool{0};
  int64_t next_id = 1;
};

DeviceStreams& device_streams(int device) {
  static auto* d = new DeviceStreams[kDeviceCount];
  return d[device];
}

std::mutex& registry_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<const void*>& registry() {
  static auto* r = new std::unordered_set<const void*>;
  return *r;
}

StreamObject* new_stream_locked(DeviceStreams& ds, int device, bool deflt) {
  auto* s = new StreamObject;
  s->device = device;
  s->id = deflt ? 0 : ds.next_id++;
  ds.all.push_back(s);
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().insert(s);
  return s;
}

void check_stream(simStream_t stream) {
  if (!stream) {
    throw std::invalid_argument("infini_sim: null stream");
  }
}

void submit(simStream_t stream, const void* const* ptrs, size_t n,
            std::function<void()> fn, bool kernel) {
  Task task{std::move(fn), {}, kernel};
  {
    std::lock_guard<std::mutex> lock(mem_mutex());
    task.blocks = lookup_blocks(ptrs, n);
    for (Block* b : task.blocks) {
      ++b->pending;
    }
  }
  stream->push(std::move(task));
}

void launch_impl(simStream_t stream, const void* const* ptrs, size_t n,
                 std::function<void()> fn) {
  check_stream(stream);
  if (stream->device != t_device) {
    throw std::runtime_error(
        "infini_sim: launch on a stream of device " +
        std::to_string(stream->device) + " while the current device is " +
        std::to_string(t_device) +
        " (set the stream's device first, as with a device guard)");
  }
  g_launches.fetch_add(1, std::memory_order_relaxed);
  if (g_null_kernels.load(std::memory_order_relaxed)) {
    return;
  }
  submit(stream, ptrs, n, std::move(fn), true);
}

void wait_idle(simStream_t stream) {
  std::unique_lock<std::mutex> lock(stream->m);
  stream->done_cv.wait(lock,
                       [&] { return stream->completed == stream->submitted; });
}

}  // namespace

int device_count() { return kDeviceCount; }

int current_device() { return t_device; }

void set_device(int index) {
  check_index(index);
  t_device = index;
}

int exchange_device(int index) {
  check_index(index);
  int old = t_device;
  t_device = index;
  return old;
}

simStream_t default_stream(int device) {
  check_index(device);
  // Made once for all devices: the hot path (a current-stream lookup by the
  // generated code) then takes no lock.
  static StreamObject* const* defaults = [] {
    auto* d = new StreamObject*[kDeviceCount];
    for (int i = 0; i < kDeviceCount; ++i) {
      auto& ds = device_streams(i);
      std::lock_guard<std::mutex> lock(ds.m);
      d[i] = ds.default_stream = new_stream_locked(ds, i, true);
    }
    return d;
  }();
  return defaults[device];
}

simStream_t create_stream(int device) {
  check_index(device);
  auto& ds = device_streams(device);
  std::lock_guard<std::mutex> lock(ds.m);
  return new_stream_locked(ds, device, false);
}

simStream_t pool_stream(int device) {
  check_index(device);
  auto& ds = device_streams(device);
  unsigned i = ds.next_pool.fetch_add(1) % kPoolSize;
  std::lock_guard<std::mutex> lock(ds.m);
  if (!ds.pool[i]) {
    ds.pool[i] = new_stream_locked(ds, device, false);
  }
  return ds.pool[i];
}

int stream_device(simStream_t stream) {
  check_stream(stream);
  return stream->device;
}

int64_t stream_id(simStream_t stream) {
  check_stream(stream);
  return stream->id;
}

bool is_stream(const void* stream) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().count(stream) != 0;
}

void launch(simStream_t stream, std::initializer_list<const void*> touched,
            std::function<void()> fn) {
  launch_impl(stream, touched.begin(), touched.size(), std::move(fn));
}

void launch(simStream_t stream, const std::vector<const void*>& touched,
            std::function<void()> fn) {
  launch_impl(stream, touched.data(), touched.size(), std::move(fn));
}

void enqueue_copy(simStream_t stream, const std::vector<const void*>& touched,
                  std::function<void()> fn) {
  check_stream(stream);
  submit(stream, touched.data(), touched.size(), std::move(fn), true);
}

void launch_sleep(simStream_t stream, double milliseconds) {
  launch(stream, {}, [milliseconds] {
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(milliseconds));
  });
}

void launch_error(simStream_t stream, const std::string& message) {
  launch(stream, {}, [message] { throw std::runtime_error(message); });
}

void stream_synchronize(simStream_t stream) {
  check_stream(stream);
  std::unique_lock<std::mutex> lock(stream->m);
  stream->done_cv.wait(lock,
                       [&] { return stream->completed == stream->submitted; });
  if (!stream->error.empty()) {
    throw std::runtime_error("infini_sim: a kernel on stream " +
                             std::to_string(stream->id) + " of device " +
                             std::to_string(stream->device) +
                             " failed: " + stream->error);
  }
}

void device_synchronize(int device) {
  check_index(device);
  std::vector<StreamObject*> streams;
  {
    auto& ds = device_streams(device);
    std::lock_guard<std::mutex> lock(ds.m);
    streams = ds.all;
  }
  // Wait for all before reporting the first error, as cudaDeviceSynchronize.
  for (auto* s : streams) {
    wait_idle(s);
  }
  for (auto* s : streams) {
    stream_synchronize(s);
  }
}

bool stream_query(simStream_t stream) {
  check_stream(stream);
  std::lock_guard<std::mutex> lock(stream->m);
  return stream->completed == stream->submitted;
}

void stream_clear_error(simStream_t stream) {
  check_stream(stream);
  std::lock_guard<std::mutex> lock(stream->m);
  stream->error.clear();
}

void clear_errors() {
  for (int d = 0; d < kDeviceCount; ++d) {
    std::vector<StreamObject*> streams;
    {
      auto& ds = device_streams(d);
      std::lock_guard<std::mutex> lock(ds.m);
      streams = ds.all;
    }
    for (auto* s : streams) {
      stream_clear_error(s);
    }
  }
}

// ---- memory ----

void* device_malloc(int device, size_t bytes) {
  check_index(device);
  if (bytes == 0) {
    return nullptr;
  }
  const size_t page = page_size();
  const size_t mapped = (bytes + page - 1) / page * page;
  const int prot = protection_enabled() ? PROT_NONE : PROT_READ | PROT_WRITE;
  void* p = mmap(nullptr, mapped, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw std::bad_alloc();
  }
  auto* b = new Block{reinterpret_cast<uintptr_t>(p), mapped, device};
  std::lock_guard<std::mutex> lock(mem_mutex());
  blocks()[b->base] = b;
  return p;
}

void device_free(void* ptr) {
  if (!ptr) {
    return;
  }
  std::lock_guard<std::mutex> lock(mem_mutex());
  auto it = blocks().find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks().end()) {
    throw std::invalid_argument(
        "infini_sim: device_free of a pointer that is not the start of a "
        "device block");
  }
  Block* b = it->second;
  blocks().erase(it);  // no new work can find it; the mapping stays meanwhile
  b->freed = true;
  if (b->pending == 0 && b->access == 0) {
    unmap_locked(b);
  }
}

int device_of(const void* ptr) {
  std::lock_guard<std::mutex> lock(mem_mutex());
  Block* b = find_block_locked(ptr);
  return b ? b->device : -1;
}

DeviceAccess::DeviceAccess(std::initializer_list<const void*> ptrs)
    : DeviceAccess(std::vector<const void*>(ptrs)) {}

DeviceAccess::DeviceAccess(const std::vector<const void*>& ptrs) {
  std::lock_guard<std::mutex> lock(mem_mutex());
  for (Block* b : lookup_blocks(ptrs.data(), ptrs.size())) {
    acquire_locked(b);
    blocks_.push_back(b);
  }
}

DeviceAccess::~DeviceAccess() {
  std::vector<Block*> held;
  for (void* b : blocks_) {
    held.push_back(static_cast<Block*>(b));
  }
  release_and_maybe_unmap(held, false);
}

void memcpy_host_to_device(void* dst, const void* src, size_t n,
                           simStream_t stream) {
  stream_synchronize(stream);
  if (!t_uncounted) {
    g_h2d.fetch_add(1, std::memory_order_relaxed);
  }
  DeviceAccess access({dst});
  std::memcpy(dst, src, n);
}

void memcpy_device_to_host(void* dst, const void* src, size_t n,
                           simStream_t stream) {
  stream_synchronize(stream);
  if (!t_uncounted) {
    g_d2h.fetch_add(1, std::memory_order_relaxed);
  }
  DeviceAccess access({src});
  std::memcpy(dst, src, n);
}

void memcpy_device_to_device(void* dst, const void* src, size_t n,
                             simStream_t stream) {
  g_d2d.fetch_add(1, std::memory_order_relaxed);
  enqueue_copy(stream, {dst, src}, [dst, src, n] { std::memmove(dst, src, n); });
}

// ---- events ----

namespace {
std::mutex& events_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<const void*>& events() {
  static auto* e = new std::unordered_set<const void*>;
  return *e;
}
}  // namespace

simEvent_t event_create() {
  auto* e = new EventObject;
  std::lock_guard<std::mutex> lock(events_mutex());
  events().insert(e);
  return e;
}

void event_destroy(simEvent_t event) {
  {
    std::lock_guard<std::mutex> lock(events_mutex());
    events().erase(event);
  }
  delete event;
}

bool is_event(const void* event) {
  std::lock_guard<std::mutex> lock(events_mutex());
  return events().count(event) != 0;
}

void event_record(simEvent_t event, simStream_t stream) {
  check_stream(stream);
  auto marker = std::make_shared<Marker>();
  {
    std::lock_guard<std::mutex> lock(event->m);
    event->marker = marker;
  }
  Task task{[marker] {
              std::lock_guard<std::mutex> lock(marker->m);
              marker->time = std::chrono::steady_clock::now();
              marker->done = true;
              marker->cv.notify_all();
            },
            {},
            false};
  stream->push(std::move(task));
}

namespace {
std::shared_ptr<Marker> marker_of(simEvent_t event) {
  std::lock_guard<std::mutex> lock(event->m);
  return event->marker;
}
void wait_marker(Marker& m) {
  std::unique_lock<std::mutex> lock(m.m);
  m.cv.wait(lock, [&] { return m.done; });
}
}  // namespace

void stream_wait_event(simStream_t stream, simEvent_t event) {
  check_stream(stream);
  auto marker = marker_of(event);
  if (!marker) {
    return;
  }
  stream->push(Task{[marker] { wait_marker(*marker); }, {}, false});
}

bool event_query(simEvent_t event) {
  auto marker = marker_of(event);
  if (!marker) {
    return true;
  }
  std::lock_guard<std::mutex> lock(marker->m);
  return marker->done;
}

void event_synchronize(simEvent_t event) {
  auto marker = marker_of(event);
  if (marker) {
    wait_marker(*marker);
  }
}

double event_elapsed_ms(simEvent_t start, simEvent_t end) {
  auto a = marker_of(start), b = marker_of(end);
  if (!a || !b) {
    throw std::runtime_error(
        "infini_sim: elapsed time of an event that was never recorded");
  }
  std::lock_guard<std::mutex> la(a->m);
  std::lock_guard<std::mutex> lb(b->m);
  if (!a->done || !b->done) {
    throw std::runtime_error(
        "infini_sim: elapsed time of an event that has not completed");
  }
  return std::chrono::duration<double, std::milli>(b->time - a->time).count();
}

// ---- counters and modes ----

Stats stats() {
  Stats s;
  s.device_to_host_copies = g_d2h.load();
  s.host_to_device_copies = g_h2d.load();
  s.device_to_device_copies = g_d2d.load();
  s.kernel_launches = g_launches.load();
  s.fallback_runs = g_fallbacks.load();
  std::lock_guard<std::mutex> lock(fallback_ops_mutex());
  s.fallback_ops = fallback_ops();
  return s;
}

void reset_stats() {
  g_d2h = 0;
  g_h2d = 0;
  g_d2d = 0;
  g_launches = 0;
  g_fallbacks = 0;
  std::lock_guard<std::mutex> lock(fallback_ops_mutex());
  fallback_ops().clear();
}

void count_fallback(const std::string& op_name) {
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(fallback_ops_mutex());
  ++fallback_ops()[op_name];
}

UncountedCopies::UncountedCopies() : previous_(t_uncounted) {
  t_uncounted = true;
}

UncountedCopies::~UncountedCopies() { t_uncounted = previous_; }

bool null_kernels() { return g_null_kernels.load(std::memory_order_relaxed); }

void set_null_kernels(bool on) { g_null_kernels.store(on); }

bool in_bad_fork() { return g_bad_fork.load(); }

bool protection_enabled() {
  static const bool enabled = read_protection_env();
  return enabled;
}

}  // namespace infini_sim
