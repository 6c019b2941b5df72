// Calls the InfiniOps C++ API on buffers this program owns, and checks every
// result against a plain loop: a native kernel, PyTorch fallbacks on strided
// views, several outputs, a composite, a tensor list, and how errors arrive.
// One line per check; exit status 1 if any failed. Build: README.md here.
//
// Tensors made here from raw pointers carry no PyTorch handle, so every
// fallback call rebuilds its at::Tensors with at::from_blob (docs/cpp.md).
#include <ATen/core/dispatch/Dispatcher.h>  // the ops as PyTorch operators
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>  // c10::Error: what ATen throws

#include <infiniops/ops.h>
#include <infiniops/torch/aten_convert.h>  // torch_bridge::OutputNotResizable

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ops = infini::ops;
using ops::DataType;
using ops::Device;
using ops::Dims;
using ops::Implementation;
using ops::Tensor;

namespace {

int g_passed = 0;
int g_failed = 0;

void report(bool ok, const std::string& what, const std::string& detail = "") {
  if (ok) {
    ++g_passed;
    std::printf("ok   %s\n", what.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL %s: %s\n", what.c_str(), detail.c_str());
  }
}

// Empty when every element is within tolerance, else the first mismatch.
std::string mismatch(const std::vector<float>& got,
                     const std::vector<float>& want, float tol = 1e-5f) {
  if (got.size() != want.size()) return "size differs";
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i])))) {
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) +
             ", want " + std::to_string(want[i]);
    }
  }
  return "";
}

void check_close(const std::string& what, const std::vector<float>& got,
                 const std::vector<float>& want, float tol = 1e-5f) {
  const std::string detail = mismatch(got, want, tol);
  report(detail.empty(), what, detail);
}

// The first line of a message (c10's may carry a long context).
std::string first_line(const char* text) {
  const std::string s(text);
  return s.substr(0, s.find('\n')).substr(0, 90);
}

// Runs call and reports ok only when it throws exactly the family Expected.
template <class Expected, class Call>
void expect_error(const std::string& what, Call&& call) {
  try {
    call();
    report(false, what, "no exception");
  } catch (const Expected& e) {
    report(true, what + ": " + first_line(e.what()));
  } catch (const std::exception& e) {
    report(false, what, "another exception: " + first_line(e.what()));
  }
}

// Deterministic, distinct values (no ties for max).
std::vector<float> values(std::size_t n, float phase) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(1.3f * i + phase);
  return v;
}

Tensor f32(std::vector<float>& v, Dims shape) {
  return Tensor::contiguous(v.data(), std::move(shape), DataType::kFloat32, Device{});
}

}  // namespace

int main() {
  // Line by line even into a pipe, so a crash still shows the checks so far.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // --- A native kernel: add (float32 CPU, small enough to be the default) --
  std::vector<float> a = values(8, 0.1f), b = values(8, 0.7f), sum(8);
  Tensor ta = f32(a, {2, 4}), tb = f32(b, {2, 4}), tsum = f32(sum, {2, 4});
  std::vector<float> want(8);
  for (int i = 0; i < 8; ++i) want[i] = a[i] + 2.0f * b[i];
  ops::add(ta, tb, 2.0, tsum);
  check_close("add (default dispatch)", sum, want);
  sum.assign(8, 0.0f);
  // kNative raises instead of falling back, so success proves the kernel ran.
  ops::add(ta, tb, 2.0, tsum, Implementation::kNative);
  check_close("add (Implementation::kNative)", sum, want);

  // --- Fallback ops on strided inputs --------------------------------------
  // exp of every second column of a 4x6 buffer: shape {4, 3}, strides {6, 2}.
  std::vector<float> grid = values(24, 0.3f), e(12);
  Tensor cols = f32(grid, {4, 6}).slice(1, 0, INT64_MAX, 2);
  Tensor te = f32(e, {4, 3});
  ops::exp(cols, te);
  want.assign(12, 0.0f);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) want[r * 3 + c] = std::exp(grid[r * 6 + 2 * c]);
  check_close("exp of a step-2 slice (strides {6, 2})", e, want);

  // abs of a transposed view: element (r, c) of the view is buf[c * 4 + r].
  std::vector<float> buf = values(12, 0.5f), ab(12);
  Tensor tab = f32(ab, {4, 3});
  ops::abs(f32(buf, {3, 4}).transpose(0, 1), tab);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) want[r * 3 + c] = std::fabs(buf[c * 4 + r]);
  check_close("abs of a transposed view", ab, want);

  // mm: (2x3) @ (3x4), the right operand a transpose of a 4x3 buffer.
  std::vector<float> m1 = values(6, 0.2f), m2 = values(12, 0.9f), prod(8);
  Tensor tprod = f32(prod, {2, 4});
  ops::mm(f32(m1, {2, 3}), f32(m2, {4, 3}).transpose(0, 1), tprod);
  want.assign(8, 0.0f);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want[i * 4 + j] += m1[i * 3 + k] * m2[j * 3 + k];
  check_close("mm with a transposed operand", prod, want);

  // --- Several outputs: max over dim 1 gives values and int64 indices ------
  // (ATen's schema names the outputs max and max_values: the second holds
  // the indices.)
  std::vector<float> mx = values(12, 0.4f), mval(3);
  std::vector<int64_t> midx(3, -1);
  Tensor tval = f32(mval, {3});
  Tensor tidx = Tensor::contiguous(midx.data(), {3}, DataType::kInt64, Device{});
  ops::max(f32(mx, {3, 4}), 1, /*keepdim=*/false, tval, tidx);
  bool max_ok = true;
  std::string max_detail;
  for (int r = 0; r < 3; ++r) {
    int best = 0;
    for (int c = 1; c < 4; ++c)
      if (mx[r * 4 + c] > mx[r * 4 + best]) best = c;
    if (midx[r] != best || mval[r] != mx[r * 4 + best]) {
      max_ok = false;
      max_detail = "row " + std::to_string(r) + ": index " + std::to_string(midx[r]) +
                   ", want " + std::to_string(best);
    }
  }
  report(max_ok, "max over dim 1 (values and indices)", max_detail);

  // --- A composite: rms_norm, by its native kernel and by its torch body ---
  const int rows = 2, n = 8;
  std::vector<float> x = values(rows * n, 0.6f), w = values(n, 1.1f), y(rows * n);
  want.assign(rows * n, 0.0f);
  for (int r = 0; r < rows; ++r) {
    float ss = 0;
    for (int j = 0; j < n; ++j) ss += x[r * n + j] * x[r * n + j];
    const float inv = 1.0f / std::sqrt(ss / n + 1e-6f);
    for (int j = 0; j < n; ++j) want[r * n + j] = x[r * n + j] * inv * w[j];
  }
  Tensor tx = f32(x, {rows, n}), tw = f32(w, {n}), ty = f32(y, {rows, n});
  ops::rms_norm(tx, tw, 1e-6, ty);
  check_close("rms_norm (default: native kernel)", y, want, 1e-4f);
  y.assign(rows * n, 0.0f);
  ops::rms_norm(tx, tw, 1e-6, ty, Implementation::kTorch);
  check_close("rms_norm (Implementation::kTorch: composite through ATen)", y, want, 1e-4f);

  // --- cat over a list: a contiguous 2x3 and a strided 1x3 row -------------
  std::vector<float> c1 = values(6, 0.8f), c2 = values(6, 1.5f), cat_out(9);
  const std::vector<Tensor> parts = {f32(c1, {2, 3}),
                                     f32(c2, {2, 3}).slice(0, 1, 2)};  // row 1
  Tensor tcat = f32(cat_out, {3, 3});
  ops::cat(parts, 0, tcat);
  want.assign(c1.begin(), c1.end());
  want.insert(want.end(), c2.begin() + 3, c2.end());
  check_close("cat of two tensors along dim 0", cat_out, want);

  // --- Errors: the library's (infini::ops::Error family) --------------------
  std::vector<float> small(3, 1.0f), wide(5);
  Tensor tsmall = f32(small, {3});
  // The out has no handle, so ATen cannot resize it to the result's shape.
  // ATen's "was resized" warning still reaches stderr (c10's default warning
  // handler); it is false here: the caller's buffer was not resized.
  expect_error<ops::torch_bridge::OutputNotResizable>(
      "exp into a wrong-shaped out -> OutputNotResizable", [&] {
        Tensor twide = f32(wide, {5});
        ops::exp(tsmall, twide);
      });
  // from_blob tensors have separate storages, so the library checks overlap.
  std::vector<float> shared(4, 1.0f);
  expect_error<ops::Error>("out partly overlapping the input -> ops::Error", [&] {
    Tensor in = f32(shared, {3});
    Tensor out = in.offset(1);
    ops::exp(in, out);
  });
  expect_error<ops::NotImplementedError>(
      "kNative on exp (no native kernel) -> NotImplementedError",
      [&] { ops::exp(tsmall, tsmall, Implementation::kNative); });
  // The message names the alternatives as C++ spells them (Python callers
  // read 'torch' or 'default').
  try {
    ops::exp(tsmall, tsmall, Implementation::kNative);
    report(false, "kNative's error names the alternatives", "no exception");
  } catch (const ops::NotImplementedError& e) {
    const std::string text = e.what();
    const std::size_t at = text.rfind("; use ");
    report(at != std::string::npos,
           "kNative's error names the alternatives: " +
               (at == std::string::npos ? text : text.substr(at + 2)),
           text);
  }
  expect_error<ops::ValueError>("a stream on CPU tensors -> ValueError", [&] {
    ops::exp(tsmall, tsmall, Implementation::kDefault, ops::Stream::of(nullptr));
  });

  // --- Errors ATen raises reach the caller as c10::Error --------------------
  expect_error<c10::Error>("mm of (2x3) @ (2x3) -> c10::Error", [&] {
    std::vector<float> out4(4);
    Tensor t = f32(m1, {2, 3}), o = f32(out4, {2, 2});
    ops::mm(t, t, o);
  });
  // In place (the out is the input): ATen never resizes such an out, as
  // torch.add(x, y, out=x) refuses a broadcast shape x does not have.
  expect_error<c10::Error>("in place into a broadcast shape -> c10::Error", [&] {
    std::vector<float> one(1, 1.0f);
    Tensor x = f32(one, {});
    ops::add(x, tsmall, 1.0, x);
  });
  // c10 has subclasses too: a dim out of range is a c10::IndexError.
  expect_error<c10::IndexError>("max over dim 5 of a 1-D tensor -> c10::IndexError", [&] {
    ops::max(tsmall, 5, false, tval, tidx);
  });

  // --- What ran where (docs/observability.md) ------------------------------
  // Counters from C++: add's native kernel and exp's fallback, both on
  // tensors made here (no handle: the fallback rebuilds them, from_blob).
  {
    const ops::observe::Control& observation = ops::observation();
    observation.reset_stats(true);
    ops::add(ta, tb, 2.0, tsum);
    ops::exp(cols, te);
    ops::exp(cols, te);
    const std::vector<ops::observe::Count> counts = observation.stats();
    observation.reset_stats(false);
    std::string seen;
    bool native_add = false, fallback_exp = false;
    for (const ops::observe::Count& c : counts) {
      seen += c.op + "/" + c.implementation + "/" + c.path + "=" + std::to_string(c.calls) + " ";
      native_add |= c.op == "add" && c.implementation == "native" && c.calls == 1;
      fallback_exp |= c.op == "exp" && c.implementation == "torch" &&
                      c.path.rfind("from_blob+", 0) == 0 && c.calls == 2;
    }
    report(native_add && fallback_exp && counts.size() == 2,
           "observation().stats(): add ran natively once, exp twice from_blob in torch", seen);
    // The strict native mode: exp has no native kernel, so its call raises.
    observation.require_native(false, {"exp"});
    expect_error<ops::NotImplementedError>("require_native({exp}): exp -> NotImplementedError",
                                           [&] { ops::exp(cols, te); });
    observation.require_native(false, {});
  }

  // --- The ops as PyTorch operators, for libtorch callers ------------------
  // (docs/compile.md): torch.ops.infiniops.<op> without Python.
  ops::register_torch_ops();
  {
    auto add = c10::Dispatcher::singleton().findSchema({"infiniops::add", "Tensor"});
    report(add.has_value(), "register_torch_ops(): infiniops::add.Tensor in c10::Dispatcher");
    if (add.has_value()) {
      std::vector<float> x = values(6, 0.5f), y = values(6, 1.5f);
      const at::Tensor a = at::from_blob(x.data(), {6}, at::kFloat);
      const at::Tensor b = at::from_blob(y.data(), {6}, at::kFloat);
      const at::Tensor sum =
          add->typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Scalar&)>().call(
              a, b, 2);
      std::vector<float> got(sum.data_ptr<float>(), sum.data_ptr<float>() + 6), want(6);
      for (int i = 0; i < 6; ++i) want[i] = x[i] + 2 * y[i];
      check_close("infiniops::add.Tensor through the dispatcher = x + 2y", got, want);
    }
  }

  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
