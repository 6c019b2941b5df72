// The C++ API over device memory the sim backend's runtime allocated
// (issue 39, item 4): core Tensors made over infini_sim::device_malloc
// pointers with Device{DeviceType::kSim, index} carry no PyTorch handle, so
// each fallback call takes the from_blob path (at::from_blob over a device
// pointer, through the wrapper pool); native kernels launch on the stream.
//
// No Python in this process: the sim torch backend is registered by
// libinfini_sim_torch.so's static initializers (libinfiniops.so needs it,
// and the program links InfiniSim::torch). PrivateUse1 keeps its default
// name "privateuseone" (only the Python package renames it to "sim"); the
// from_blob path needs the c10 device type alone, so no
// c10::register_privateuse1_backend call is made here.
//
// One line per check ("ok   ..." / "FAIL ..."), then "N passed, M failed";
// exit status 1 when any check failed. tests/test_sim_cpp_api.py builds it
// against the cpu,sim build and runs it.
#include <c10/core/DeviceType.h>  // c10::get_privateuse1_backend
#include <c10/util/Exception.h>   // c10::Error

#include <infini_sim/runtime.h>
#include <infini_sim/torch.h>  // the current stream of a device (SimStream)

#include "ops.h"
#include "torch/aten_convert.h"  // wrapper_pool_stats, g_wrapper_pool

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <typeinfo>
#include <vector>

namespace ops = infini::ops;
namespace sim = infini_sim;
namespace tb = infini::ops::torch_bridge;
using ops::DataType;
using ops::Device;
using ops::DeviceType;
using ops::Implementation;
using ops::Stream;
using ops::Tensor;

namespace {

int g_passed = 0;
int g_failed = 0;
uint64_t g_reads = 0;  // this program's device->host copies

void report(bool ok, const std::string& what, const std::string& detail = "") {
  if (ok) {
    ++g_passed;
    std::printf("ok   %s\n", what.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL %s: %s\n", what.c_str(), detail.c_str());
  }
}

std::string first_line(const char* text) {
  const std::string s(text);
  return s.substr(0, s.find('\n')).substr(0, 110);
}

std::string mismatch(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "size differs";
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i])))) {
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
    }
  }
  return "";
}

std::vector<float> values(std::size_t n, float phase) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(1.3f * i + phase) * 3.0f;
  return v;
}

constexpr int64_t kRows = 2, kCols = 4, kN = kRows * kCols;
constexpr std::size_t kBytes = kN * sizeof(float);

// A float32 2x4 block of device memory and its core Tensor.
struct DeviceBuffer {
  int device;
  float* ptr;
  // index: the core Device's (its device by default; -1: the current one).
  Tensor tensor(int index = -2) const {
    return Tensor::contiguous(
        ptr, {kRows, kCols}, DataType::kFloat32,
        Device{DeviceType::kSim, static_cast<int16_t>(index == -2 ? device : index)});
  }
};

DeviceBuffer alloc(int device) {
  return DeviceBuffer{device, static_cast<float*>(sim::device_malloc(device, kBytes))};
}

void write(const DeviceBuffer& b, const std::vector<float>& v) {
  sim::memcpy_host_to_device(b.ptr, v.data(), kBytes, sim::default_stream(b.device));
}

// Waits for `stream`'s work (every stream of the device when null), then
// copies the buffer back: the only device->host copies of this program.
std::vector<float> read(const DeviceBuffer& b, sim::simStream_t stream = nullptr) {
  if (stream != nullptr) {
    sim::stream_synchronize(stream);
  } else {
    sim::device_synchronize(b.device);
    stream = sim::default_stream(b.device);
  }
  std::vector<float> v(kN);
  sim::memcpy_device_to_host(v.data(), b.ptr, kBytes, stream);
  ++g_reads;
  return v;
}

void check_close(const std::string& what, const std::vector<float>& got,
                 const std::vector<float>& want) {
  const std::string detail = mismatch(got, want);
  report(detail.empty(), what, detail);
}

void check_current(const std::string& after, int want) {
  const int now = sim::current_device();
  report(now == want, "current device still " + std::to_string(want) + " after " + after,
         "it is " + std::to_string(now));
}

// Queues on `stream` (of `device`) a 40 ms wait, then a device->device copy
// of `staging` into `dst`: work that only something ordered after it on that
// stream sees done. launch needs the stream's device current: switched for
// the enqueue, then restored.
void delayed_write(sim::simStream_t stream, int device, const DeviceBuffer& dst,
                   const DeviceBuffer& staging) {
  const int previous = sim::exchange_device(device);
  sim::launch_sleep(stream, 40.0);
  sim::memcpy_device_to_device(dst.ptr, staging.ptr, kBytes, stream);
  sim::set_device(previous);
}

std::vector<float> add_ref(const std::vector<float>& a, const std::vector<float>& b, float alpha) {
  std::vector<float> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = std::fma(alpha, b[i], a[i]);
  return r;
}
std::vector<float> abs_ref(const std::vector<float>& a) {
  std::vector<float> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = std::fabs(a[i]);
  return r;
}
std::vector<float> sub_ref(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] - b[i];
  return r;
}

bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The call throws: returns "<type>: <first line>" ("" when it did not throw).
template <class Call>
std::string thrown(Call&& call, bool* library_error = nullptr) {
  try {
    call();
  } catch (const ops::Error& e) {
    if (library_error) *library_error = true;
    return std::string("infini::ops::Error (") + typeid(e).name() + "): " + first_line(e.what());
  } catch (const c10::Error& e) {
    if (library_error) *library_error = false;
    return "c10::Error: " + first_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    if (library_error) *library_error = false;
    return std::string("std::exception (") + typeid(e).name() + "): " + first_line(e.what());
  }
  return "";
}

// `sim_cpp_api current-device`: tensors made with Device{DeviceType::kSim, -1},
// "the current device of that type, as in PyTorch" (docs/cpp.md), over
// memory of the current device, with each device current in turn. The
// from_blob path must give ATen a tensor on that device (at::from_blob asks
// the backend's getDeviceFromPtr), and the pool must not re-bind a wrapper of
// one device to the other's memory.
int current_device_checks() {
  const std::vector<float> va = values(kN, 0.3f), vb = values(kN, 1.9f);
  for (int dev : {1, 0}) {
    sim::set_device(dev);
    const std::string on = " (Device{kSim, -1}, device " + std::to_string(dev) + " current)";
    DeviceBuffer a = alloc(dev), b = alloc(dev), out = alloc(dev);
    write(a, va), write(b, vb);
    const Tensor ta = a.tensor(-1), tb = b.tensor(-1);
    Tensor to = out.tensor(-1);
    const sim::simStream_t s = sim::create_stream(dev);
    const auto run = [&](const std::string& what, auto&& call, sim::simStream_t stream,
                         const std::vector<float>& want) {
      write(out, std::vector<float>(kN, 42.0f));
      const std::string error = thrown(call);
      if (!error.empty()) {
        report(false, what + on, error);
      } else {
        check_close(what + on, read(out, stream), want);
      }
      check_current(what + on, dev);
    };
    run("add (kNative)", [&] { ops::add(ta, tb, 2.0, to, Implementation::kNative); }, nullptr,
        add_ref(va, vb, 2.0f));
    run("add (kNative, Stream::of(s))",
        [&] { ops::add(ta, tb, 2.0, to, Implementation::kNative, Stream::of(s)); }, s,
        add_ref(va, vb, 2.0f));
    run("abs (torch fallback)", [&] { ops::abs(ta, to); }, nullptr, abs_ref(va));
    run("abs (torch fallback, Stream::of(s))",
        [&] { ops::abs(ta, to, Implementation::kDefault, Stream::of(s)); }, s, abs_ref(va));
    run("sub (kTorch)", [&] { ops::sub(ta, tb, 1.0, to, Implementation::kTorch); }, nullptr,
        sub_ref(va, vb));
    for (const DeviceBuffer& buf : {a, b, out}) sim::device_free(buf.ptr);
  }
  // The pool, with the current device alternating: a wrapper made while
  // one device was current must not serve the other device's memory.
  DeviceBuffer in[2] = {alloc(0), alloc(1)}, out[2] = {alloc(0), alloc(1)};
  for (int d = 0; d < 2; ++d) write(in[d], d == 0 ? va : vb);
  bool right = true;
  std::string detail;
  for (int k = 0; k < 20 && right; ++k) {
    const int d = k % 2;
    sim::set_device(d);
    write(out[d], std::vector<float>(kN, 42.0f));
    Tensor o = out[d].tensor(-1);
    detail = thrown([&] { ops::abs(in[d].tensor(-1), o, Implementation::kTorch); });
    if (!detail.empty()) {
      right = false;
    } else {
      detail = mismatch(read(out[d]), abs_ref(d == 0 ? va : vb));
      right = detail.empty() && sim::current_device() == d;
    }
    if (!right) detail = "call " + std::to_string(k) + " on device " + std::to_string(d) + ": " + detail;
  }
  report(right, "20 abs calls on Device{kSim, -1}, the current device alternating", detail);
  // A tensor labelled with another device than its memory's: PyTorch's
  // at::from_blob refuses it, and so does the from_blob path.
  sim::set_device(0);
  Tensor mislabelled = in[1].tensor(0);
  Tensor o0 = out[0].tensor(0);
  const std::string refused = thrown([&] { ops::abs(mislabelled, o0, Implementation::kTorch); });
  report(refused.find("does not match device of data") != std::string::npos,
         "a sim:0 tensor over sim:1 memory is refused", refused);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc > 1 && std::string(argv[1]) == "current-device") return current_device_checks();

  // --- The backend, without Python -----------------------------------------
  report(sim::device_count() == 2, "the sim runtime has 2 devices");
  report(c10::get_privateuse1_backend() == "privateuseone",
         "PrivateUse1 keeps its name without Python (the from_blob path needs only the type)",
         c10::get_privateuse1_backend());
  report(c10::GetAllocator(c10::DeviceType::PrivateUse1) != nullptr &&
             sim::getCurrentSimStream(1).stream() == sim::default_stream(1),
         "libinfini_sim_torch registered PrivateUse1 (allocator, guard, streams)");

  sim::set_device(0);
  const sim::Stats base = sim::stats();

  // Device memory on device 1 and device 0.
  const std::vector<float> va = values(kN, 0.1f), vb = values(kN, 0.7f),
                           vnew = values(kN, 2.3f), zeros(kN, 0.0f), sentinel(kN, 42.0f);
  DeviceBuffer a1 = alloc(1), b1 = alloc(1), new1 = alloc(1), out1 = alloc(1);
  DeviceBuffer a0 = alloc(0), b0 = alloc(0), out0 = alloc(0);
  report(sim::device_of(a1.ptr) == 1 && sim::device_of(a0.ptr) == 0,
         "device_malloc gave memory of device 1 and device 0");
  write(a1, va), write(b1, vb), write(new1, vnew), write(out1, zeros);
  write(a0, va), write(b0, vb), write(out0, zeros);
  const Tensor ta1 = a1.tensor(), tb1 = b1.tensor();
  Tensor to1 = out1.tensor();
  const Tensor ta0 = a0.tensor(), tb0 = b0.tensor();
  Tensor to0 = out0.tensor();

  const sim::simStream_t s1 = sim::create_stream(1);
  report(sim::stream_device(s1) == 1 && s1 != sim::default_stream(1),
         "create_stream(1): a non-default stream of device 1");
  check_current("setup", 0);

  // --- A native op on device 1 with the caller's stream, device 0 current ---
  {
    ops::observation().reset_stats(true);
    const uint64_t launches = sim::stats().kernel_launches;
    ops::add(ta1, tb1, 2.0, to1, Implementation::kNative, Stream::of(s1));
    check_current("add(kNative, stream of device 1)", 0);
    check_close("add on device 1 (kNative, Stream::of(s1)) = a + 2b", read(out1, s1),
                add_ref(va, vb, 2.0f));
    report(sim::stats().kernel_launches == launches + 1, "add(kNative) launched one kernel");
    report(sim::getCurrentSimStream(1).stream() == sim::default_stream(1) &&
               sim::getCurrentSimStream(0).stream() == sim::default_stream(0),
           "each device's current stream restored after a call with a stream");

    // Stream order: a write queued on s1 (after a wait) is seen by add only
    // when add's kernel runs on s1 after it.
    write(out1, zeros);
    write(a1, va);
    delayed_write(s1, 1, a1, new1);
    ops::add(ta1, tb1, 1.0, to1, Implementation::kDefault, Stream::of(s1));
    check_current("add(kDefault, stream of device 1)", 0);
    check_close("add (default dispatch) on s1 runs after s1's earlier work", read(out1, s1),
                add_ref(vnew, vb, 1.0f));
    write(a1, va);

    // No stream: the current stream of the tensors' device (1), not of the
    // current device (0).
    write(out1, zeros);
    delayed_write(sim::default_stream(1), 1, a1, new1);
    ops::add(ta1, tb1, 3.0, to1);
    check_current("add without a stream on device 1", 0);
    check_close("add without a stream, on device 1's current (default) stream",
                read(out1, sim::default_stream(1)), add_ref(vnew, vb, 3.0f));
    write(a1, va);

    // Device 1's current stream set to s1 (torch.h): a call without a
    // stream takes it.
    write(out1, zeros);
    sim::setCurrentSimStream(sim::getStreamFromExternal(s1, 1));
    delayed_write(s1, 1, a1, new1);
    ops::add(ta1, tb1, 1.0, to1);
    sim::setCurrentSimStream(sim::getDefaultSimStream(1));
    check_current("add without a stream, s1 current on device 1", 0);
    check_close("add without a stream takes device 1's current stream (s1)", read(out1, s1),
                add_ref(vnew, vb, 1.0f));
    write(a1, va);

    // On device 0, the current one, without a stream.
    ops::add(ta0, tb0, -1.0, to0, Implementation::kNative);
    check_current("add on device 0", 0);
    check_close("add on device 0 (kNative, no stream)", read(out0), add_ref(va, vb, -1.0f));

    const auto counts = ops::observation().stats();
    ops::observation().reset_stats(false);
    uint64_t native_core = 0, other = 0;
    std::string seen;
    for (const auto& c : counts) {
      seen += c.op + "/" + c.implementation + "/" + c.path + "=" + std::to_string(c.calls) + " ";
      if (c.op == "add" && c.implementation == "native" && c.path == "core") {
        native_core += c.calls;
      } else {
        other += c.calls;
      }
    }
    report(native_core == 5 && other == 0,
           "observation(): all 5 adds ran natively on the tensors as made (path core)", seen);
  }

  // --- Torch-fallback ops (abs, sub): the from_blob path on device memory --
  {
    ops::observation().reset_stats(true);
    const sim::Stats before = sim::stats();
    write(out1, sentinel);
    ops::abs(ta1, to1, Implementation::kDefault, Stream::of(s1));
    check_current("abs(stream of device 1)", 0);
    check_close("abs on device 1 (torch fallback, Stream::of(s1))", read(out1, s1), abs_ref(va));

    write(out1, sentinel);
    delayed_write(s1, 1, a1, new1);
    ops::sub(ta1, tb1, 1.0, to1, Implementation::kTorch, Stream::of(s1));
    check_current("sub(kTorch, stream of device 1)", 0);
    check_close("sub (kTorch) on s1 runs after s1's earlier work", read(out1, s1),
                sub_ref(vnew, vb));
    write(a1, va);

    write(out1, sentinel);
    delayed_write(sim::default_stream(1), 1, a1, new1);
    ops::abs(ta1, to1);
    check_current("abs without a stream on device 1", 0);
    check_close("abs without a stream, after device 1's current stream's work", read(out1),
                abs_ref(vnew));
    write(a1, va);

    write(out0, sentinel);
    ops::sub(ta0, tb0, 1.0, to0, Implementation::kTorch);
    check_current("sub on device 0", 0);
    check_close("sub on device 0 (kTorch, no stream)", read(out0), sub_ref(va, vb));

    const sim::Stats after = sim::stats();
    const auto ran = [&](const char* op) {
      const auto b = before.fallback_ops.find(op);
      const auto a = after.fallback_ops.find(op);
      return (a == after.fallback_ops.end() ? 0 : a->second) -
             (b == before.fallback_ops.end() ? 0 : b->second);
    };
    report(ran("aten::abs.out") == 2 && ran("aten::sub.out") == 2,
           "the sim device's fallback ran abs.out and sub.out twice each (on the device)",
           "abs.out " + std::to_string(ran("aten::abs.out")) + ", sub.out " +
               std::to_string(ran("aten::sub.out")));
    const auto counts = ops::observation().stats();
    ops::observation().reset_stats(false);
    uint64_t from_blob = 0, other = 0;
    std::string seen;
    for (const auto& c : counts) {
      seen += c.op + "/" + c.implementation + "/" + c.path + "=" + std::to_string(c.calls) + " ";
      if (c.implementation == "torch" && c.path.rfind("from_blob+", 0) == 0) {
        from_blob += c.calls;
      } else {
        other += c.calls;
      }
    }
    report(from_blob == 4 && other == 0,
           "observation(): abs and sub took the torch fallback's from_blob path", seen);
  }

  // --- The wrapper pool over device memory -----------------------------------
  {
    report(tb::g_wrapper_pool.load(), "the wrapper pool is on (default)");
    tb::clear_wrapper_pool();
    // Two inputs per device, alternated, so wrappers are re-bound to other
    // memory; device 0 and device 1 alternate, so a wrapper made for one
    // device must never serve the other.
    DeviceBuffer c1 = alloc(1), c0 = alloc(0), out1b = alloc(1), out0b = alloc(0);
    const std::vector<float> vc = values(kN, 4.1f);
    write(c1, vc), write(c0, vc);
    const Tensor inputs1[2] = {ta1, c1.tensor()}, inputs0[2] = {ta0, c0.tensor()};
    Tensor outs1[2] = {to1, out1b.tensor()}, outs0[2] = {to0, out0b.tensor()};
    const std::vector<float> want[2] = {abs_ref(va), abs_ref(vc)};
    constexpr int kCalls = 1000;
    bool right = true;
    std::string detail;
    for (int k = 0; k < kCalls; ++k) {
      const int j = k % 2;
      if (k % 4 < 2) {
        ops::abs(inputs1[j], outs1[j], Implementation::kTorch,
                 k % 8 < 4 ? Stream::of(s1) : Stream{});
      } else {
        ops::abs(inputs0[j], outs0[j], Implementation::kTorch);
      }
      if (k % 100 == 99) {  // every 100th call: all four outputs read back
        const DeviceBuffer o1[2] = {out1, out1b}, o0[2] = {out0, out0b};
        for (int i = 0; i < 2; ++i) {
          for (const DeviceBuffer& b : {o1[i], o0[i]}) {
            const std::string m = mismatch(read(b, b.device == 1 ? s1 : nullptr), want[i]);
            if (!m.empty() && right) {
              right = false;
              detail = "call " + std::to_string(k) + ", device " + std::to_string(b.device) +
                       ": " + m;
            }
            std::vector<float> scrub(kN, -7.0f);
            write(b, scrub);  // the next calls must write them again
          }
        }
      }
    }
    check_current("1000 abs calls", 0);
    report(right, "1000 abs calls alternating devices, buffers and streams: values right",
           detail);
    const tb::WrapperPoolStats st = tb::wrapper_pool_stats();
    const std::string counts = "fresh " + std::to_string(st.fresh) + " rebound " +
                               std::to_string(st.rebound) + " kept " +
                               std::to_string(st.kept) + " dropped " +
                               std::to_string(st.dropped) + " pooled " +
                               std::to_string(st.pooled);
    report(st.fresh == 4 && st.rebound == 2 * kCalls - 4 && st.kept == 2 * kCalls &&
               st.dropped == 0 && st.pooled == 4,
           "wrapper pool: 2 wrappers per device made once, then re-bound (" + counts + ")",
           counts);

    // The switch off: a fresh wrapper per argument and call, same results.
    tb::g_wrapper_pool.store(false);
    tb::clear_wrapper_pool();
    write(out1, sentinel);
    for (int k = 0; k < 10; ++k) ops::abs(ta1, to1, Implementation::kTorch, Stream::of(s1));
    const tb::WrapperPoolStats off = tb::wrapper_pool_stats();
    tb::g_wrapper_pool.store(true);
    check_close("abs with the wrapper pool off (g_wrapper_pool = false)", read(out1, s1),
                abs_ref(va));
    report(off.fresh == 20 && off.rebound == 0 && off.pooled == 0,
           "pool off: 20 fresh wrappers for 10 calls, none pooled",
           "fresh " + std::to_string(off.fresh) + " rebound " + std::to_string(off.rebound));
    tb::clear_wrapper_pool();
    for (const DeviceBuffer& b : {c1, c0, out1b, out0b}) sim::device_free(b.ptr);
  }

  // --- Errors: nothing written, the current device unchanged ----------------
  {
    // One tensor on sim:0, another on sim:1.
    write(out0, sentinel);
    write(out1, sentinel);
    // The native kernel declines (not one device), and the sim device's
    // fallback raises as torch does for CUDA tensors: a c10::Error (ATen's
    // family, docs/cpp.md "Errors"); the library makes no device check of
    // its own.
    bool library = true;
    std::string what = thrown([&] { ops::add(ta0, tb1, 1.0, to0); }, &library);
    report(!library && what.find("same device") != std::string::npos,
           "add(sim:0, sim:1 -> sim:0) throws ATen's error: " + what,
           what.empty() ? "no exception" : what);
    check_current("the mixed-device add", 0);
    what = thrown([&] { ops::add(ta0, tb1, 1.0, to0, Implementation::kNative); }, &library);
    report(library && what.find("declined") != std::string::npos,
           "add(kNative) of sim:0 and sim:1 throws the library's ImplementationError: " + what,
           what.empty() ? "no exception" : what);
    what = thrown([&] { ops::sub(ta1, tb0, 1.0, to1, Implementation::kTorch, Stream::of(s1)); },
                  &library);
    report(!library && what.find("same device") != std::string::npos,
           "sub(sim:1, sim:0 -> sim:1, stream of device 1) throws: " + what,
           what.empty() ? "no exception" : what);
    check_current("the mixed-device sub", 0);
    what = thrown([&] { ops::abs(ta1, to0); }, &library);
    report(!library && what.find("same device") != std::string::npos,
           "abs(sim:1 -> sim:0) throws: " + what, what.empty() ? "no exception" : what);
    // A stream of device 1 for tensors on device 0.
    what = thrown([&] { ops::abs(ta0, to0, Implementation::kDefault, Stream::of(s1)); });
    report(!what.empty(), "abs on device 0 with a stream of device 1 throws: " + what,
           "no exception");
    check_current("a stream of the wrong device", 0);
    report(same(read(out0), sentinel) && same(read(out1, s1), sentinel),
           "the calls that threw wrote nothing");
    report(sim::getCurrentSimStream(1).stream() == sim::default_stream(1),
           "device 1's current stream restored after the calls that threw");
  }

  // --- Device->host copies: only this program's reads ------------------------
  sim::device_synchronize(0);
  sim::device_synchronize(1);
  const sim::Stats end = sim::stats();
  const uint64_t copies = end.device_to_host_copies - base.device_to_host_copies;
  report(copies == g_reads,
         "device->host copies: " + std::to_string(copies) + ", all of them this program's reads",
         std::to_string(copies) + " copies, " + std::to_string(g_reads) + " reads");
  report(end.fallback_runs > base.fallback_runs,
         "the fallback's own moves are fallback runs (" +
             std::to_string(end.fallback_runs - base.fallback_runs) + "), not device->host copies");

  for (const DeviceBuffer& b : {a1, b1, new1, out1, a0, b0, out0}) sim::device_free(b.ptr);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
