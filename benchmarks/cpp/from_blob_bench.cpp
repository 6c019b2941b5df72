// The from_blob path against its alternatives, per call on tiny float32
// tensors, for a C++ caller (scripts/bench_cpp.py builds and runs it):
//
//   native    the library's own kernel (implementation kNative), where the op
//             has one
//   re-bound  tensors without a handle, the torch fallback (kTorch): the
//             wrapper pool re-binds at::Tensor wrappers of earlier calls
//   fresh     the same with the pool off: a fresh from_blob tensor per
//             argument and call
//   handle    tensors made with torch_bridge::from_aten: the fallback reuses
//             their at::Tensors (the target of the re-bound path: <= 1.25x)
//   floor     ATen's own call on at::Tensors made once: at::cpu::<op>_out
//             under the autograd-below guard with the version bump, as the
//             fallback's direct path does; ops whose fallback goes through
//             the dispatcher (cat, native_layer_norm) or a composite body
//             (rms_norm) make that same call
//
// The variants run interleaved: each round times every variant once (calls
// back to back), and the table gives each variant's median over rounds; the
// ratios are medians of each round's own ratio (this machine's clock moves
// between rounds, so a round's variants are compared with each other).
// Allocations: heap allocations per call in the steady state, counted by the
// test suite's counting allocator (tests/alloc_counter.c, linked in).
//
// Usage: from_blob_bench [--rounds N] [--calls N] [--json]
#include "common.h"

#include <ATen/Parallel.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/abs_cpu_dispatch.h>
#include <ATen/ops/add_cpu_dispatch.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/ops/native_layer_norm.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/resize.h>
#include <ATen/ops/rms_norm.h>
#include <ATen/ops/sum_cpu_dispatch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace bench;

namespace {

const char* const kVariants[] = {"native", "re-bound", "fresh", "handle", "floor"};
constexpr int kNumVariants = 5;

struct Case {
  std::string op;
  int tensors;  // tensor arguments, outputs included
  // One call per variant; empty where the op has no such variant.
  std::array<std::function<void()>, kNumVariants> call;
};

// The direct path's floor: what the fallback's direct call does.
template <class F>
void direct(const at::Tensor& out, F&& f) {
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    f();
  }
  out.unsafeGetTensorImpl()->bump_version();
}

std::vector<Case> cases() {
  const io::Implementation kTorch = io::Implementation::kTorch;
  const io::Implementation kNative = io::Implementation::kNative;
  std::vector<Case> result;
  auto add_case = [&](std::string op, int tensors, std::function<void()> native,
                      std::function<void()> rebound, std::function<void()> handle,
                      std::function<void()> floor) {
    // fresh: the re-bound call with the pool off.
    auto fresh = [rebound] {
      tb::g_wrapper_pool.store(false, std::memory_order_relaxed);
      rebound();
      tb::g_wrapper_pool.store(true, std::memory_order_relaxed);
    };
    result.push_back(Case{std::move(op), tensors, {native, rebound, fresh, handle, floor}});
  };

  {
    at::Tensor x = at::rand({2, 3}), o = at::empty({2, 3});
    io::Tensor rx = raw(x), ro = raw(o), hx = handle(x), ho = handle(o);
    add_case(
        "abs", 2, {}, [=]() mutable { io::abs(rx, ro, kTorch); },
        [=]() mutable { io::abs(hx, ho, kTorch); },
        [=] { direct(o, [&] { at::cpu::abs_out(const_cast<at::Tensor&>(o), x); }); });
  }
  {
    at::Tensor x = at::rand({2, 3}), y = at::rand({2, 3}), o = at::empty({2, 3});
    io::Tensor rx = raw(x), ry = raw(y), ro = raw(o);
    io::Tensor hx = handle(x), hy = handle(y), ho = handle(o);
    add_case(
        "add", 3, [=]() mutable { io::add(rx, ry, 1, ro, kNative); },
        [=]() mutable { io::add(rx, ry, 1, ro, kTorch); },
        [=]() mutable { io::add(hx, hy, 1, ho, kTorch); },
        [=] { direct(o, [&] { at::cpu::add_out(const_cast<at::Tensor&>(o), x, y, 1); }); });
  }
  {
    at::Tensor x = at::rand({2, 3}), o = at::empty({2});
    io::Tensor rx = raw(x), ro = raw(o), hx = handle(x), ho = handle(o);
    static const int64_t dim[] = {1};
    const std::span<const int64_t> dims(dim);
    add_case(
        "sum", 2, {}, [=]() mutable { io::sum(rx, dims, false, std::nullopt, ro, kTorch); },
        [=]() mutable { io::sum(hx, dims, false, std::nullopt, ho, kTorch); },
        [=] {
          direct(o, [&] {
            at::cpu::sum_out(const_cast<at::Tensor&>(o), x, at::IntArrayRef(dim), false,
                             std::nullopt);
          });
        });
  }
  {
    at::Tensor a = at::rand({2, 4}), b = at::rand({4, 3}), o = at::empty({2, 3});
    io::Tensor ra = raw(a), rb = raw(b), ro = raw(o);
    io::Tensor ha = handle(a), hb = handle(b), ho = handle(o);
    add_case(
        "mm", 3, {}, [=]() mutable { io::mm(ra, rb, ro, kTorch); },
        [=]() mutable { io::mm(ha, hb, ho, kTorch); },
        [=] { direct(o, [&] { at::cpu::mm_out(const_cast<at::Tensor&>(o), a, b); }); });
  }
  {
    at::Tensor x = at::rand({2, 3}), y = at::rand({2, 3}), o = at::empty({4, 3});
    std::array<io::Tensor, 2> rxs{raw(x), raw(y)}, hxs{handle(x), handle(y)};
    io::Tensor ro = raw(o), ho = handle(o);
    add_case(
        "cat", 3, {}, [=]() mutable { io::cat(rxs, 0, ro, kTorch); },
        [=]() mutable { io::cat(hxs, 0, ho, kTorch); },
        [=]() mutable {
          const std::array<at::Tensor, 2> list{x, y};
          at::cat_out(o, at::ITensorListRef(at::TensorList(list)), 0);
        });
  }
  {
    at::Tensor x = at::rand({2, 3}), w = at::rand({3}), b = at::rand({3});
    at::Tensor o0 = at::empty({2, 3}), o1 = at::empty({2, 1}), o2 = at::empty({2, 1});
    static const int64_t shape[] = {3};
    const std::span<const int64_t> normalized(shape);
    io::Tensor rx = raw(x), rw = raw(w), rb = raw(b), r0 = raw(o0), r1 = raw(o1), r2 = raw(o2);
    io::Tensor hx = handle(x), hw = handle(w), hb = handle(b), h0 = handle(o0), h1 = handle(o1),
               h2 = handle(o2);
    add_case(
        "native_layer_norm", 6, {},
        [=]() mutable {
          io::native_layer_norm(rx, normalized, rw, rb, 1e-5, r0, r1, r2, kTorch);
        },
        [=]() mutable {
          io::native_layer_norm(hx, normalized, hw, hb, 1e-5, h0, h1, h2, kTorch);
        },
        [=]() mutable {
          at::native_layer_norm_out(o0, o1, o2, x, at::IntArrayRef(shape), w, b, 1e-5);
        });
  }
  {
    at::Tensor x = at::rand({2, 3}), w = at::rand({3}), o = at::empty({2, 3});
    io::Tensor rx = raw(x), rw = raw(w), ro = raw(o), hx = handle(x), hw = handle(w),
               ho = handle(o);
    add_case(
        "rms_norm", 3, [=]() mutable { io::rms_norm(rx, rw, 1e-6, ro, kNative); },
        [=]() mutable { io::rms_norm(rx, rw, 1e-6, ro, kTorch); },
        [=]() mutable { io::rms_norm(hx, hw, 1e-6, ho, kTorch); },
        [=]() mutable {
          // The composite's body (op_specs/composite.yaml).
          const int64_t last = x.size(-1);
          o.resize_(x.sizes());
          o.copy_(at::rms_norm(x, {last}, w, 1e-6));
        });
  }
  return result;
}

double time_ns(const std::function<void()>& f, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < calls; ++k) f();
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / calls;
}

double allocations_per_call(const std::function<void()>& f, int calls) {
  for (int k = 0; k < 50; ++k) f();  // the steady state: pools filled
  alloc_counter_start();
  for (int k = 0; k < calls; ++k) f();
  return static_cast<double>(alloc_counter_stop()) / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 51;
  int calls = 400;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--calls") && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--calls N] [--json]\n", argv[0]);
      return 2;
    }
  }
  at::set_num_threads(1);  // tiny tensors: the call's own cost, not threading
  std::vector<Case> all = cases();
  // samples[case][variant] = per-call ns of each round
  std::vector<std::array<std::vector<double>, kNumVariants>> samples(all.size());
  for (auto& c : all) {
    for (auto& f : c.call) {
      if (f) time_ns(f, calls / 4);  // warm up
    }
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < all.size(); ++k) {
      for (int v = 0; v < kNumVariants; ++v) {
        if (all[k].call[v]) samples[k][v].push_back(time_ns(all[k].call[v], calls));
      }
    }
  }
  std::printf(
      "| op | tensors | native | re-bound | fresh from_blob | handle | floor | re-bound / "
      "handle | re-bound / floor | allocations per call: re-bound / fresh / handle |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  bool within = true;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const Case& c = all[k];
    double med[kNumVariants] = {};
    for (int v = 0; v < kNumVariants; ++v) {
      med[v] = c.call[v] ? median(samples[k][v]) : 0;
    }
    const double rebound_allocs = allocations_per_call(c.call[1], 1000);
    const double fresh_allocs = allocations_per_call(c.call[2], 1000);
    const double handle_allocs = allocations_per_call(c.call[3], 1000);
    std::vector<double> to_handle, to_floor;
    for (std::size_t r = 0; r < samples[k][1].size(); ++r) {
      to_handle.push_back(samples[k][1][r] / samples[k][3][r]);
      to_floor.push_back(samples[k][1][r] / samples[k][4][r]);
    }
    const double ratio = median(to_handle);
    within = within && ratio <= 1.25;
    char native[32] = "—";
    if (c.call[0]) std::snprintf(native, sizeof native, "%.0f", med[0]);
    std::printf(
        "| %s | %d | %s | %.0f | %.0f | %.0f | %.0f | %.2fx | %.2fx | %.1f / %.1f / %.1f |\n",
        c.op.c_str(), c.tensors, native, med[1], med[2], med[3], med[4], ratio, median(to_floor),
        rebound_allocs, fresh_allocs, handle_allocs);
    if (json) {
      std::fprintf(stderr,
                   "{\"op\": \"%s\", \"tensors\": %d, \"native\": %.1f, \"rebound\": %.1f, "
                   "\"fresh\": %.1f, \"handle\": %.1f, \"floor\": %.1f, \"rebound_allocs\": "
                   "%.2f, \"fresh_allocs\": %.2f, \"handle_allocs\": %.2f}\n",
                   c.op.c_str(), c.tensors, med[0], med[1], med[2], med[3], med[4],
                   rebound_allocs, fresh_allocs, handle_allocs);
    }
  }
  std::printf("\nns per call, medians of %d interleaved rounds of %d calls; re-bound within "
              "1.25x of handle for every op: %s\n",
              rounds, calls, within ? "yes" : "no");
  return 0;
}
