// The from_blob path's wrapper pool (torch/aten_convert.h), checked as a C++
// caller meets it: one line per check ("ok   ..." / "FAIL ..."), exit status
// 1 when any check failed. tests/test_wrapper_pool.py builds and runs it.
#include "common.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/rand.h>
#include <c10/core/InferenceMode.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace bench;

namespace {

int g_failed = 0;
int g_checks = 0;

void check(bool ok, const std::string& what, const std::string& detail = "") {
  ++g_checks;
  if (!ok) ++g_failed;
  std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), ok ? "" : ": ",
              ok ? "" : detail.c_str());
}

const io::Implementation kTorch = io::Implementation::kTorch;

io::Tensor f32(std::vector<float>& v, io::Dims shape) {
  return io::Tensor::contiguous(v.data(), std::move(shape), io::DataType::kFloat32, io::Device{});
}

bool abs_matches(const std::vector<float>& in, const std::vector<float>& out) {
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (out[k] != std::fabs(in[k])) return false;
  }
  return true;
}

void steady_state() {
  std::vector<float> x{-1, 2, -3, 4, -5, 6}, o(6);
  io::Tensor tx = f32(x, {2, 3}), to = f32(o, {2, 3});
  tb::clear_wrapper_pool();
  io::abs(tx, to, kTorch);
  const auto first = tb::wrapper_pool_stats();
  check(first.fresh == 2 && first.kept == 2 && first.pooled == 2,
        "the first call makes 2 wrappers and keeps them",
        "fresh " + std::to_string(first.fresh) + " kept " + std::to_string(first.kept));
  for (int k = 0; k < 100; ++k) io::abs(tx, to, kTorch);
  const auto later = tb::wrapper_pool_stats();
  check(later.fresh == 2 && later.rebound == 200 && later.dropped == 0,
        "100 more calls re-bind them (no fresh wrapper, none dropped)",
        "fresh " + std::to_string(later.fresh) + " rebound " + std::to_string(later.rebound));
  alloc_counter_start();
  for (int k = 0; k < 1000; ++k) io::abs(tx, to, kTorch);
  const long allocations = alloc_counter_stop();
  check(allocations == 0, "1000 steady-state calls allocate nothing",
        std::to_string(allocations) + " allocations");
  check(abs_matches(x, o), "and compute the right values");
}

void geometry_changes() {
  // The same pooled wrappers, re-bound to other shapes, strides and sizes.
  std::vector<float> x(24), o(24);
  for (int k = 0; k < 24; ++k) x[k] = static_cast<float>(k % 2 ? -k : k);
  bool ok = true;
  for (int round = 0; round < 3; ++round) {
    io::Tensor a = f32(x, {24});
    io::Tensor b = f32(x, {2, 3, 4}).transpose(0, 2);                 // strided
    io::Tensor c = f32(x, {4, 6}).slice(1, 0, 6, 2);                 // step 2
    io::Tensor d = f32(x, {1, 2, 1, 3, 1, 4});                       // 6 dims
    for (const io::Tensor& in : {a, b, c, d}) {
      std::fill(o.begin(), o.end(), 99.f);
      io::Tensor out = io::Tensor::contiguous(o.data(), in.shape(), io::DataType::kFloat32, {});
      io::abs(in, out, kTorch);
      // Expected: |x| at each element of in's geometry, written contiguously.
      std::vector<int64_t> index(in.ndim(), 0);
      for (int64_t n = 0; n < in.numel(); ++n) {
        int64_t offset = 0;
        for (int64_t dd = 0; dd < in.ndim(); ++dd) offset += index[dd] * in.stride(dd);
        const float* base = static_cast<const float*>(in.data());
        ok = ok && o[n] == std::fabs(base[offset]);
        for (int64_t dd = in.ndim(); dd-- > 0;) {
          if (++index[dd] < in.size(dd)) break;
          index[dd] = 0;
        }
      }
    }
  }
  check(ok, "re-bound wrappers follow each call's shape, strides and ndim");
}

void held_reference() {
  std::vector<float> x{1, -2, 3}, y{-4, 5, -6, 7};
  const io::Tensor tx = f32(x, {3}), ty = f32(y, {4}), ty2 = f32(y, {2, 2});
  const uint32_t key = tb::wrapper_key(tx);  // float32, CPU: all three
  tb::clear_wrapper_pool();
  at::Tensor wrapper = tb::pooled_from_blob(tx);
  at::Tensor extra = wrapper;  // as if ATen kept it beyond the call
  c10::TensorImpl* impl = wrapper.unsafeGetTensorImpl();
  tb::give_back(std::move(wrapper), key);
  auto stats = tb::wrapper_pool_stats();
  check(stats.dropped == 1 && stats.pooled == 0, "a wrapper still referenced is not kept");
  at::Tensor next = tb::pooled_from_blob(ty);
  check(next.unsafeGetTensorImpl() != impl && extra.data_ptr() == x.data() &&
            extra.numel() == 3 && next.data_ptr() == y.data(),
        "and never re-bound: its holder keeps the memory and shape it had");
  tb::give_back(std::move(next), key);

  at::Tensor w2 = tb::pooled_from_blob(tx);
  at::Tensor view = w2.view({3, 1});  // shares the storage
  tb::give_back(std::move(w2), key);
  check(tb::wrapper_pool_stats().dropped == 2, "nor one whose storage a view shares");

  tb::clear_wrapper_pool();
  at::Tensor w3 = tb::pooled_from_blob(tx);
  c10::TensorImpl* kept = w3.unsafeGetTensorImpl();
  tb::give_back(std::move(w3), key);
  at::Tensor w4 = tb::pooled_from_blob(ty2);
  check(w4.unsafeGetTensorImpl() == kept && w4.data_ptr() == y.data() &&
            w4.sizes() == at::IntArrayRef({2, 2}) && w4.storage().nbytes() == 16,
        "an unshared one is re-bound: same TensorImpl, new memory, shape and size");
  tb::give_back(std::move(w4), key);
}

void resize_and_errors() {
  // mse_loss with the mean: ATen computes into the output at the inputs'
  // shape, then reduces (it resizes the output on the way).
  std::vector<float> a{1, 2, 3, 4}, b{0, 0, 0, 0}, o{-1};
  io::Tensor ta = f32(a, {2, 2}), tb_ = f32(b, {2, 2});
  io::Tensor to = io::Tensor::contiguous(o.data(), {}, io::DataType::kFloat32, {});
  bool ok = true;
  for (int k = 0; k < 3; ++k) {
    o[0] = -1;
    io::mse_loss(ta, tb_, /*mean=*/1, to, kTorch);
    ok = ok && std::fabs(o[0] - 7.5f) < 1e-6;
  }
  check(ok, "a kernel that resizes its output (mse_loss, mean) on re-bound wrappers");

  std::vector<float> x{-1, 2, -3, 4}, wrong(3);
  io::Tensor bad = f32(wrong, {3});
  bool raised = false;
  try {
    io::abs(f32(x, {4}), bad, kTorch);
  } catch (const tb::OutputNotResizable&) {
    raised = true;
  }
  check(raised, "an output of the wrong shape raises OutputNotResizable");
  std::vector<float> o4(4);
  io::Tensor good = f32(o4, {4});
  io::abs(f32(x, {4}), good, kTorch);
  check(abs_matches(x, o4), "and the wrapper it was on serves the next call correctly");

  std::vector<float> buf{-1, -2, -3, -4, -5};
  io::Tensor whole = f32(buf, {5});
  raised = false;
  try {
    io::Tensor out = whole.slice(0, 1, 5);
    io::abs(whole.slice(0, 0, 4), out, kTorch);
  } catch (const io::Error&) {
    raised = true;
  }
  check(raised, "overlapping input and output raise infini::ops::Error");
}

void threads() {
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0};
  std::atomic<long> allocations{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([t, &wrong, &allocations] {
      std::vector<float> x(8 + t), y(8 + t), o(8 + t);
      for (int k = 0; k < 8 + t; ++k) {
        x[k] = static_cast<float>(k * (t + 1));
        y[k] = static_cast<float>(-k);
      }
      const io::Tensor tx = f32(x, {8 + t}), ty = f32(y, {8 + t});
      io::Tensor to = f32(o, {8 + t});
      for (int k = 0; k < 50; ++k) io::add(tx, ty, 2, to, kTorch);
      alloc_counter_start();  // counts this thread's allocations only
      for (int k = 0; k < 2000; ++k) {
        io::add(tx, ty, 2, to, kTorch);
        if (o[3] != x[3] + 2 * y[3]) wrong.fetch_add(1);
      }
      allocations.fetch_add(alloc_counter_stop());
      const auto stats = tb::wrapper_pool_stats();
      if (stats.rebound < 6000) wrong.fetch_add(1);
    });
  }
  for (auto& th : pool) th.join();
  check(wrong.load() == 0, "4 threads, each its own pool: right results, wrappers re-bound");
  check(allocations.load() == 0, "and no allocation in their steady state",
        std::to_string(allocations.load()) + " allocations");
}

void inference_mode() {
  std::vector<float> x{-1, 2}, o(2);
  io::Tensor tx = f32(x, {2}), to = f32(o, {2});
  {
    c10::InferenceMode guard;
    io::abs(tx, to, kTorch);
  }
  bool ok = true;
  try {
    io::abs(tx, to, kTorch);  // the wrappers made in inference mode, re-bound
  } catch (const std::exception& e) {
    ok = false;
    std::printf("     %s\n", e.what());
  }
  check(ok && abs_matches(x, o),
        "wrappers made in InferenceMode serve calls outside it (never inference tensors)");
}

template <class T>
bool abs_dtype(io::DataType dtype) {
  std::vector<T> x{T(1), T(2), T(3), T(4), T(5), T(6)}, o(6);
  io::Tensor tx = io::Tensor::contiguous(x.data(), {2, 3}, dtype, {});
  io::Tensor to = io::Tensor::contiguous(o.data(), {3, 2}, dtype, {});
  io::abs(tx.transpose(0, 1), to, kTorch);
  return o[1] == x[3] && o[2] == x[1] && o[5] == x[5];
}

void dtypes() {
  check(abs_dtype<double>(io::DataType::kFloat64) && abs_dtype<int32_t>(io::DataType::kInt32) &&
            abs_dtype<int64_t>(io::DataType::kInt64) && abs_dtype<int16_t>(io::DataType::kInt16) &&
            abs_dtype<int8_t>(io::DataType::kInt8) && abs_dtype<uint8_t>(io::DataType::kUInt8) &&
            abs_dtype<float>(io::DataType::kFloat32),
        "one pool key per dtype: transposed inputs of 7 dtypes");
}

void many_tensors() {
  // More tensors in one call than the pool keeps: the rest are fresh.
  constexpr int kParts = 40;
  std::vector<std::vector<float>> parts(kParts, std::vector<float>{1, 2});
  std::vector<io::Tensor> inputs;
  for (auto& p : parts) inputs.push_back(f32(p, {2}));
  std::vector<float> o(2 * kParts);
  io::Tensor out = f32(o, {2 * kParts});
  tb::clear_wrapper_pool();
  io::cat(inputs, 0, out, kTorch);
  io::cat(inputs, 0, out, kTorch);
  const auto stats = tb::wrapper_pool_stats();
  check(o[2 * kParts - 1] == 2 && stats.pooled <= 32 && stats.rebound > 0,
        "a call with 41 tensors: the pool keeps at most 32",
        "pooled " + std::to_string(stats.pooled));
}

}  // namespace

int main() {
  steady_state();
  geometry_changes();
  held_reference();
  resize_and_errors();
  threads();
  inference_mode();
  dtypes();
  many_tensors();
  std::printf("%d checks, %d failed\n", g_checks, g_failed);
  return g_failed == 0 ? 0 : 1;
}
