// infiniops_codegen.sim._C: what Python needs beyond torch's own stream and
// event classes (which reach the backend through its device guard).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/Context.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/Generator.h>

#include "infini_sim/torch.h"

namespace py = pybind11;

namespace {

using infini_sim::simStream_t;

// A stream named from Python by (device, id); ids other than 0 are handles,
// so they are checked against the runtime's streams before use.
simStream_t checked(int device, int64_t id) {
  if (device < 0 || device >= infini_sim::kDeviceCount) {
    throw py::value_error("invalid sim device index " + std::to_string(device));
  }
  if (id == 0) {
    return infini_sim::default_stream(device);
  }
  auto* s = reinterpret_cast<simStream_t>(id);
  if (!infini_sim::is_stream(s) || infini_sim::stream_device(s) != device) {
    throw py::value_error("not a stream of sim device " +
                          std::to_string(device) + ": id " + std::to_string(id));
  }
  return s;
}

py::dict stats() {
  auto s = infini_sim::stats();
  py::dict d;
  d["device_to_host_copies"] = s.device_to_host_copies;
  d["host_to_device_copies"] = s.host_to_device_copies;
  d["device_to_device_copies"] = s.device_to_device_copies;
  d["kernel_launches"] = s.kernel_launches;
  d["fallback_runs"] = s.fallback_runs;
  d["fallback_ops"] = s.fallback_ops;
  return d;
}

// Launches need the stream's device current, as any launch does.
template <typename F>
void on_device(int device, F&& f) {
  const c10::DeviceGuard guard(
      c10::Device(c10::DeviceType::PrivateUse1,
                  static_cast<c10::DeviceIndex>(device)));
  f();
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "The sim backend's runtime, for infiniops_codegen.sim";
  m.def("device_count", &infini_sim::device_count);
  m.def("current_device", &infini_sim::current_device);
  m.def("set_device", [](int i) {
    if (i < 0 || i >= infini_sim::kDeviceCount) {
      throw py::value_error("invalid sim device index " + std::to_string(i));
    }
    infini_sim::set_device(i);
  });
  m.def("synchronize", &infini_sim::device_synchronize,
        py::call_guard<py::gil_scoped_release>());
  m.def("stream_handle", [](int device, int64_t id) {
    return reinterpret_cast<uintptr_t>(checked(device, id));
  });
  m.def(
      "sleep",
      [](int device, int64_t id, double ms) {
        auto s = checked(device, id);
        on_device(device, [&] { infini_sim::launch_sleep(s, ms); });
      });
  // No device guard: shows a launch's check of the current device.
  m.def("sleep_unguarded", [](int device, int64_t id, double ms) {
    infini_sim::launch_sleep(checked(device, id), ms);
  });
  m.def("fail", [](int device, int64_t id, const std::string& message) {
    auto s = checked(device, id);
    on_device(device, [&] { infini_sim::launch_error(s, message); });
  });
  // torch.Event.elapsed_time takes exact torch.Event objects only; this
  // takes their event_id (the runtime's event).
  m.def("elapsed_ms", [](uintptr_t start, uintptr_t end) {
    auto* a = reinterpret_cast<infini_sim::simEvent_t>(start);
    auto* b = reinterpret_cast<infini_sim::simEvent_t>(end);
    if (!infini_sim::is_event(a) || !infini_sim::is_event(b)) {
      throw std::runtime_error(
          "both events must be recorded before calculating elapsed time");
    }
    return infini_sim::event_elapsed_ms(a, b);
  });
  m.def("clear_errors", &infini_sim::clear_errors);
  m.def("device_of",
        [](uintptr_t p) { return infini_sim::device_of(reinterpret_cast<void*>(p)); });
  m.def("stats", &stats);
  m.def("reset_stats", &infini_sim::reset_stats);
  m.def("null_kernels", &infini_sim::null_kernels);
  m.def("set_null_kernels", &infini_sim::set_null_kernels);
  m.def("protection_enabled", &infini_sim::protection_enabled);
  m.def("in_bad_fork", &infini_sim::in_bad_fork);
  m.def("current_stream_id", [](int device) {
    checked(device, 0);
    return static_cast<int64_t>(
        infini_sim::getCurrentSimStream(static_cast<c10::DeviceIndex>(device))
            .unwrap()
            .id());
  });
  // Sets a device's current stream on this thread; returns the previous id.
  m.def("exchange_stream", [](int device, int64_t id) {
    checked(device, id);
    const auto index = static_cast<c10::DeviceIndex>(device);
    const int64_t old = infini_sim::getCurrentSimStream(index).unwrap().id();
    infini_sim::setCurrentSimStream(infini_sim::SimStream(c10::Stream(
        c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index),
        id)));
    return old;
  });
  // torch.Generator objects over the per-device defaults (as torch.cuda's).
  m.def("default_generators", [] {
    py::tuple gens(infini_sim::kDeviceCount);
    for (int i = 0; i < infini_sim::kDeviceCount; ++i) {
      const auto& gen = at::globalContext().defaultGenerator(c10::Device(
          c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(i)));
      gens[i] = py::reinterpret_steal<py::object>(
          THPGenerator_initDefaultGenerator(gen));
    }
    return gens;
  });
  m.attr("DEVICE_TYPE") = static_cast<int>(c10::DeviceType::PrivateUse1);
}
