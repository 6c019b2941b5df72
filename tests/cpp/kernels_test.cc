// Self-checking test of the native CPU kernels on small hand-computed cases,
// for float32, float16 and bfloat16, with transposed, step-sliced, expanded
// and broadcast inputs, strided outs, and the cases that must return false.
#include "native_kernels.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "core/core.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/half.h"

namespace {

using namespace infini::ops;
namespace cpu = infini::ops::native::cpu;

constexpr float kSentinel = -99.0f;

// Owning storage of one dtype, filled from float values.
class Buffer {
 public:
  Buffer(DataType dtype, const std::vector<float>& values)
      : dtype_(dtype), bytes_(values.size() * element_size(dtype)) {
    for (std::size_t i = 0; i < values.size(); ++i) set(i, values[i]);
  }

  void* data() { return bytes_.data(); }
  std::size_t size() const { return bytes_.size() / element_size(dtype_); }

  float get(std::size_t i) const { return load(dtype_, bytes_.data(), i); }
  void set(std::size_t i, float v) {
    std::byte* p = bytes_.data() + i * element_size(dtype_);
    if (dtype_ == DataType::kFloat32) {
      std::memcpy(p, &v, 4);
    } else if (dtype_ == DataType::kFloat16) {
      const cpu::Half h = cpu::float_to_half(v);
      std::memcpy(p, &h, 2);
    } else if (dtype_ == DataType::kBFloat16) {
      const cpu::BFloat16 b = cpu::float_to_bfloat16(v);
      std::memcpy(p, &b, 2);
    } else if (dtype_ == DataType::kInt32) {
      const auto i32 = static_cast<int32_t>(v);
      std::memcpy(p, &i32, 4);
    } else {
      // Other dtypes only appear zero-filled (the storage starts zeroed).
      CHECK(v == 0);
    }
  }

  Tensor contiguous(Dims shape) {
    return Tensor::contiguous(data(), std::move(shape), dtype_, {});
  }
  Tensor strided(Dims shape, Dims strides, int64_t offset = 0) {
    return Tensor(data(), std::move(shape), std::move(strides), dtype_, {})
        .offset(offset);
  }

  static float load(DataType dtype, const std::byte* base, std::size_t i) {
    const std::byte* p = base + i * element_size(dtype);
    if (dtype == DataType::kFloat32) {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    if (dtype == DataType::kFloat16) {
      cpu::Half h;
      std::memcpy(&h, p, 2);
      return cpu::half_to_float(h);
    }
    if (dtype == DataType::kBFloat16) {
      cpu::BFloat16 b;
      std::memcpy(&b, p, 2);
      return cpu::bfloat16_to_float(b);
    }
    if (dtype == DataType::kInt32) {
      int32_t i32;
      std::memcpy(&i32, p, 4);
      return static_cast<float>(i32);
    }
    // Other dtypes: 0 while all bytes are zero, NaN (never equal) otherwise.
    for (std::size_t b = 0; b < element_size(dtype); ++b) {
      if (p[b] != std::byte{0}) return NAN;
    }
    return 0.0f;
  }

 private:
  DataType dtype_;
  std::vector<std::byte> bytes_;
};

// The tensor's elements in row-major logical order, read through its strides
// by a plain recursive walk (independent of the kernels' iterator).
void read_into(const Tensor& t, std::size_t dim, int64_t offset,
               std::vector<float>& out) {
  if (dim == t.shape().size()) {
    out.push_back(Buffer::load(t.dtype(),
                               static_cast<const std::byte*>(t.data()),
                               static_cast<std::size_t>(offset)));
    return;
  }
  for (int64_t i = 0; i < t.shape()[dim]; ++i) {
    read_into(t, dim + 1, offset + i * t.strides()[dim], out);
  }
}

std::vector<float> read(const Tensor& t) {
  std::vector<float> out;
  if (t.numel() > 0) read_into(t, 0, 0, out);
  return out;
}

// Relative tolerance of one or two roundings to the dtype.
double tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return 2e-3;
    case DataType::kBFloat16:
      return 1.6e-2;
    default:
      return 1e-5;
  }
}

std::string g_context;

void expect_values(const Tensor& t, const std::vector<double>& expected,
                   int line) {
  const std::vector<float> actual = read(t);
  if (actual.size() != expected.size()) {
    ++test::failures;
    std::printf("line %d [%s]: got %zu values, expected %zu\n", line,
                g_context.c_str(), actual.size(), expected.size());
    return;
  }
  const double tol = tolerance(t.dtype());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (!(std::fabs(actual[i] - expected[i]) <=
          tol * std::max(1.0, std::fabs(expected[i])))) {
      ++test::failures;
      std::printf("line %d [%s]: element %zu = %.8g, expected %.8g\n", line,
                  g_context.c_str(), i, static_cast<double>(actual[i]),
                  expected[i]);
    }
  }
}

#define EXPECT_VALUES(t, ...) \
  expect_values((t), std::vector<double>(__VA_ARGS__), __LINE__)

// Storage elements not covered by a strided out must keep the sentinel.
void expect_untouched(const Buffer& buf, const std::vector<std::size_t>& gaps,
                      int line) {
  for (std::size_t i : gaps) {
    if (buf.get(i) != kSentinel) {
      ++test::failures;
      std::printf("line %d [%s]: storage element %zu was overwritten (%g)\n",
                  line, g_context.c_str(), i, static_cast<double>(buf.get(i)));
    }
  }
}

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

void test_add(DataType dt) {
  {  // contiguous, alpha = 2
    Buffer a(dt, {1, 2, 3, 4, 5, 6}), b(dt, {10, 20, 30, 40, 50, 60}),
        o(dt, std::vector<float>(6));
    Tensor out = o.contiguous({2, 3});
    CHECK(
        cpu::add(a.contiguous({2, 3}), b.contiguous({2, 3}), Scalar(2.0), out));
    EXPECT_VALUES(out, {21, 42, 63, 84, 105, 126});
    CHECK(cpu::add(a.contiguous({2, 3}), b.contiguous({2, 3}), Scalar(-1),
                   out));  // int alpha
    EXPECT_VALUES(out, {-9, -18, -27, -36, -45, -54});
  }
  {  // broadcasting: [2,3] + [3] and [2,1] + [1,3]
    Buffer a(dt, {1, 2, 3, 4, 5, 6}), b(dt, {1, 2, 3}),
        o(dt, std::vector<float>(6));
    Tensor out = o.contiguous({2, 3});
    CHECK(cpu::add(a.contiguous({2, 3}), b.contiguous({3}), Scalar(1), out));
    EXPECT_VALUES(out, {2, 4, 6, 5, 7, 9});
    Buffer col(dt, {1, 2}), row(dt, {10, 20, 30});
    CHECK(cpu::add(col.contiguous({2, 1}), row.contiguous({1, 3}), Scalar(1),
                   out));
    EXPECT_VALUES(out, {11, 21, 31, 12, 22, 32});
    Buffer s(dt, {0.5f});  // 0-d input broadcast against [3]
    Tensor out3 = o.contiguous({3});
    CHECK(cpu::add(row.contiguous({3}), s.contiguous({}), Scalar(2), out3));
    EXPECT_VALUES(out3, {11, 21, 31});
  }
  {  // transposed input: storage [3,2] viewed as [2,3]
    Buffer a(dt, {1, 2, 3, 4, 5, 6}), b(dt, {10, 10, 10, 20, 20, 20}),
        o(dt, std::vector<float>(6));
    Tensor at = a.contiguous({3, 2}).transpose(0, 1);
    Tensor out = o.contiguous({2, 3});
    CHECK(cpu::add(at, b.contiguous({2, 3}), Scalar(1), out));
    EXPECT_VALUES(out, {11, 13, 15, 22, 24, 26});
  }
  {  // step-sliced input and step-sliced out with sentinel gaps
    Buffer a(dt, {0, 1, 2, 3, 4, 5}), b(dt, {1, 1, 1});
    Buffer o(dt, std::vector<float>(6, kSentinel));
    Tensor as = a.contiguous({6}).slice(0, 0, 6, 2);   // 0, 2, 4
    Tensor out = o.contiguous({6}).slice(0, 1, 6, 2);  // storage 1, 3, 5
    CHECK(cpu::add(as, b.contiguous({3}), Scalar(3), out));
    EXPECT_VALUES(out, {3, 5, 7});
    expect_untouched(o, {0, 2, 4}, __LINE__);
  }
  {  // expanded (stride 0) input, transposed out
    Buffer a(dt, {7}), b(dt, {1, 2, 3, 4, 5, 6}), o(dt, std::vector<float>(6));
    Tensor ae = a.contiguous({1}).expand({2, 3});
    Tensor out =
        o.contiguous({3, 2}).transpose(0, 1);  // logical [2,3], strides {1,2}
    CHECK(cpu::add(ae, b.contiguous({2, 3}), Scalar(1), out));
    EXPECT_VALUES(out, {8, 9, 10, 11, 12, 13});
    // Storage of the transposed out is column-major.
    CHECK(o.get(0) == 8 && o.get(1) == 11 && o.get(2) == 9);
  }
  {  // more than 8 dims (heap-backed Dims), with broadcasting
    Buffer a(dt, {1, 2}), b(dt, {10, 20, 30}), o(dt, std::vector<float>(6));
    Dims a_shape(10, 1), b_shape(10, 1), out_shape(10, 1);
    a_shape[3] = 2;
    b_shape[9] = 3;
    out_shape[3] = 2;
    out_shape[9] = 3;
    Tensor out = o.contiguous(out_shape);
    CHECK(
        cpu::add(a.contiguous(a_shape), b.contiguous(b_shape), Scalar(1), out));
    EXPECT_VALUES(out, {11, 21, 31, 12, 22, 32});
  }
  {  // in place: out is input
    Buffer a(dt, {1, 2, 3}), b(dt, {1, 1, 1});
    Tensor ta = a.contiguous({3});
    CHECK(cpu::add(ta, b.contiguous({3}), Scalar(1), ta));
    EXPECT_VALUES(ta, {2, 3, 4});
  }
  {  // empty tensors: nothing to do, still handled
    Buffer a(dt, {}), o(dt, {});
    Tensor out = o.contiguous({0, 3});
    CHECK(cpu::add(a.contiguous({0, 3}), a.contiguous({0, 3}), Scalar(1), out));
  }
  {  // cases left to PyTorch
    Buffer a(dt, {1, 2, 3, 4, 5, 6}), b(dt, {1, 2, 3}),
        o(dt, std::vector<float>(9));
    Tensor ta = a.contiguous({2, 3});
    Tensor tb = b.contiguous({3});
    Tensor wrong = o.contiguous({3, 3});
    CHECK(!cpu::add(ta, tb, Scalar(1), wrong));  // not the broadcast shape
    Tensor wrong_rank = o.contiguous({1, 2, 3});
    CHECK(!cpu::add(ta, tb, Scalar(1), wrong_rank));
    Tensor small = o.contiguous({3});
    CHECK(!cpu::add(ta, tb, Scalar(1), small));  // out would need broadcasting
    Tensor out = o.contiguous({2, 3});
    CHECK(!cpu::add(ta, tb, Scalar(true), out));  // bool alpha
    CHECK(!cpu::add(ta, tb, Scalar(std::complex<double>(1, 1)), out));
    Tensor expanded_out = o.contiguous({3}).expand({2, 3});
    CHECK(!cpu::add(ta, tb, Scalar(1), expanded_out));  // self-overlapping out
    Tensor shifted =
        a.contiguous({6}).offset(0).slice(0, 1, 4);  // overlaps a partly
    Tensor a3 = a.contiguous({6}).slice(0, 0, 3);
    CHECK(!cpu::add(a3, tb, Scalar(1), shifted));
    Tensor gpu_out(o.data(), {2, 3}, {3, 1}, dt,
                   Device{DeviceType::kNvidia, 0});
    CHECK(!cpu::add(ta, tb, Scalar(1), gpu_out));
    const DataType other_dt =
        dt == DataType::kFloat32 ? DataType::kFloat16 : DataType::kFloat32;
    Buffer c(other_dt, {1, 2, 3});
    CHECK(!cpu::add(ta, c.contiguous({3}), Scalar(1), out));  // mixed dtypes
    // Nothing above may have written to out.
    for (std::size_t i = 0; i < 9; ++i) CHECK(o.get(i) == 0);
  }
}

void test_mul(DataType dt) {
  {
    Buffer a(dt, {1, 2, 3, 4, 5, 6}), b(dt, {2, 3, 4, 5, 6, 7}),
        o(dt, std::vector<float>(6));
    Tensor out = o.contiguous({2, 3});
    CHECK(cpu::mul(a.contiguous({2, 3}), b.contiguous({2, 3}), out));
    EXPECT_VALUES(out, {2, 6, 12, 20, 30, 42});
    Buffer col(dt, {1, -2}), row(dt, {0.5f, 3, 4});
    CHECK(cpu::mul(col.contiguous({2, 1}), row.contiguous({3}), out));
    EXPECT_VALUES(out, {0.5, 3, 4, -1, -6, -8});
  }
  {  // transposed x step-sliced, into a step-sliced out
    Buffer a(dt, {1, 2, 3, 4, 5, 6}),
        b(dt, {1, 9, 2, 9, 3, 9, 4, 9, 5, 9, 6, 9});
    Buffer o(dt, std::vector<float>(12, kSentinel));
    Tensor at = a.contiguous({3, 2}).transpose(0, 1);     // [[1,3,5],[2,4,6]]
    Tensor bs = b.contiguous({2, 6}).slice(1, 0, 6, 2);   // [[1,2,3],[4,5,6]]
    Tensor out = o.contiguous({2, 6}).slice(1, 1, 6, 2);  // odd columns
    CHECK(cpu::mul(at, bs, out));
    EXPECT_VALUES(out, {1, 6, 15, 8, 20, 36});
    expect_untouched(o, {0, 2, 4, 6, 8, 10}, __LINE__);
  }
  {  // expanded input
    Buffer a(dt, {2, 3}), b(dt, {1, 2, 3, 4, 5, 6}),
        o(dt, std::vector<float>(6));
    Tensor ae = a.contiguous({2, 1}).expand({2, 3});
    Tensor out = o.contiguous({2, 3});
    CHECK(cpu::mul(ae, b.contiguous({2, 3}), out));
    EXPECT_VALUES(out, {2, 4, 6, 12, 15, 18});
  }
  {
    Buffer a(dt, {1, 2, 3}), o(dt, std::vector<float>(4));
    Tensor wrong = o.contiguous({4});
    CHECK(!cpu::mul(a.contiguous({3}), a.contiguous({3}), wrong));
    Tensor incompatible = o.contiguous({2});
    CHECK(!cpu::mul(a.contiguous({3}), a.contiguous({2}).offset(0),
                    incompatible));
  }
}

void test_silu(DataType dt) {
  const std::vector<float> xs = {-3, -1, 0, 0.5f, 2, 10};
  std::vector<double> expected;
  for (float x : xs) expected.push_back(silu_ref(x));
  {
    Buffer a(dt, xs), o(dt, std::vector<float>(6));
    Tensor out = o.contiguous({2, 3});
    CHECK(cpu::silu(a.contiguous({2, 3}), out));
    EXPECT_VALUES(out, expected);
  }
  {  // transposed input into a transposed out: same logical values back
    Buffer a(dt, xs), o(dt, std::vector<float>(6));
    Tensor at = a.contiguous({3, 2}).transpose(0, 1);
    Tensor out = o.contiguous({3, 2}).transpose(0, 1);
    CHECK(cpu::silu(at, out));
    EXPECT_VALUES(out, {expected[0], expected[2], expected[4], expected[1],
                        expected[3], expected[5]});
    for (std::size_t i = 0; i < 6; ++i)
      CHECK_NEAR(o.get(i), expected[i], tolerance(dt) * 10);
  }
  {  // step-sliced input; large negative input stays finite (-0, not NaN)
    Buffer a(dt, {-100, 7, 1, 7, -2, 7}), o(dt, std::vector<float>(3));
    Tensor out = o.contiguous({3});
    CHECK(cpu::silu(a.contiguous({6}).slice(0, 0, 6, 2), out));
    EXPECT_VALUES(out, {0, silu_ref(1), silu_ref(-2)});
    CHECK(std::isfinite(o.get(0)));
  }
  {  // expanded input
    Buffer a(dt, {1}), o(dt, std::vector<float>(4));
    Tensor out = o.contiguous({2, 2});
    CHECK(cpu::silu(a.contiguous({1, 1}).expand({2, 2}), out));
    EXPECT_VALUES(out, {silu_ref(1), silu_ref(1), silu_ref(1), silu_ref(1)});
  }
  {
    Buffer a(dt, xs), o(dt, std::vector<float>(6));
    Tensor wrong = o.contiguous({3, 2});
    CHECK(!cpu::silu(a.contiguous({2, 3}), wrong));  // same numel, wrong shape
  }
}

std::vector<double> rms_norm_ref(const std::vector<std::vector<double>>& rows,
                                 const std::vector<double>& w, double eps) {
  std::vector<double> out;
  for (const auto& row : rows) {
    double sum = 0;
    for (double v : row) sum += v * v;
    const double inv =
        1.0 / std::sqrt(sum / static_cast<double>(row.size()) + eps);
    for (std::size_t j = 0; j < row.size(); ++j)
      out.push_back(row[j] * inv * w[j]);
  }
  return out;
}

void test_rms_norm(DataType dt) {
  const std::vector<double> w = {0.5, 1, 2, 1};
  const double eps = 1e-6;
  // Row [1,2,3,4]: mean of squares 7.5; row [-2,0,2,4]: 6.
  const std::vector<double> expected =
      rms_norm_ref({{1, 2, 3, 4}, {-2, 0, 2, 4}}, w, eps);
  CHECK_NEAR(expected[3], 4 / std::sqrt(7.5 + eps), 1e-12);
  {
    Buffer x(dt, {1, 2, 3, 4, -2, 0, 2, 4}), wt(dt, {0.5f, 1, 2, 1}),
        o(dt, std::vector<float>(8));
    Tensor out = o.contiguous({2, 4});
    CHECK(cpu::rms_norm(x.contiguous({2, 4}), wt.contiguous({4}), eps, out));
    EXPECT_VALUES(out, expected);
  }
  {  // transposed input, step-sliced weight, transposed out
    Buffer x(dt, {1, -2, 2, 0, 3, 2, 4,
                  4});  // [4,2] storage, transposed -> rows above
    Buffer wt(dt, {0.5f, 9, 1, 9, 2, 9, 1, 9});
    Buffer o(dt, std::vector<float>(8));
    Tensor xt = x.contiguous({4, 2}).transpose(0, 1);
    Tensor ws = wt.contiguous({8}).slice(0, 0, 8, 2);
    Tensor out = o.contiguous({4, 2}).transpose(0, 1);
    CHECK(cpu::rms_norm(xt, ws, eps, out));
    EXPECT_VALUES(out, expected);
  }
  {  // 3-d input with an expanded (stride 0) batch dim; in place
    Buffer x(dt, {1, 2, 3, 4}), wt(dt, {0.5f, 1, 2, 1}),
        o(dt, std::vector<float>(8));
    Tensor xe = x.contiguous({1, 1, 4}).expand({2, 1, 4});
    Tensor out = o.contiguous({2, 1, 4});
    CHECK(cpu::rms_norm(xe, wt.contiguous({4}), eps, out));
    std::vector<double> twice(expected.begin(), expected.begin() + 4);
    twice.insert(twice.end(), expected.begin(), expected.begin() + 4);
    EXPECT_VALUES(out, twice);

    Buffer y(dt, {1, 2, 3, 4, -2, 0, 2, 4});
    Tensor ty = y.contiguous({2, 4});
    CHECK(cpu::rms_norm(ty, wt.contiguous({4}), eps, ty));
    EXPECT_VALUES(ty, expected);
  }
  {  // a large eps matters: row [3,4], mean square 12.5, eps 3.5 -> rms 4
    Buffer x(dt, {3, 4}), wt(dt, {1, 1}), o(dt, std::vector<float>(2));
    Tensor out = o.contiguous({2});
    CHECK(cpu::rms_norm(x.contiguous({2}), wt.contiguous({2}), 3.5, out));
    EXPECT_VALUES(out, {0.75, 1.0});
  }
  {
    Buffer x(dt, {1, 2, 3, 4, -2, 0, 2, 4}), wt(dt, {1, 1, 1, 1}),
        o(dt, std::vector<float>(8));
    Tensor out = o.contiguous({2, 4});
    CHECK(!cpu::rms_norm(x.contiguous({2, 4}), wt.contiguous({3}), eps, out));
    CHECK(
        !cpu::rms_norm(x.contiguous({2, 4}), wt.contiguous({1, 4}), eps, out));
    Tensor wrong = o.contiguous({4, 2});
    CHECK(!cpu::rms_norm(x.contiguous({2, 4}), wt.contiguous({4}), eps, wrong));
    const DataType other_dt =
        dt == DataType::kFloat32 ? DataType::kBFloat16 : DataType::kFloat32;
    Buffer w_other(other_dt, {1, 1, 1, 1});
    CHECK(!cpu::rms_norm(x.contiguous({2, 4}), w_other.contiguous({4}), eps,
                         out));
    Tensor aliased_w = o.contiguous({8}).slice(0, 0, 4);  // weight overlaps out
    CHECK(!cpu::rms_norm(x.contiguous({2, 4}), aliased_w, eps, out));
  }
}

void test_silu_and_mul(DataType dt) {
  {  // [2,4] -> [2,2]
    Buffer x(dt, {1, -1, 2, 3, 0.5f, 2, -4, 0.25f}),
        o(dt, std::vector<float>(4));
    Tensor out = o.contiguous({2, 2});
    CHECK(cpu::silu_and_mul(x.contiguous({2, 4}), out));
    EXPECT_VALUES(out, {silu_ref(1) * 2, silu_ref(-1) * 3, silu_ref(0.5) * -4,
                        silu_ref(2) * 0.25});
  }
  {  // 3-d, transposed input, step-sliced out with sentinel gaps
    // Storage [4,2] read transposed: logical [2,1,4] rows {1,-1,2,3},
    // {0.5,2,-4,0.25}.
    Buffer x(dt, {1, 0.5f, -1, 2, 2, -4, 3, 0.25f});
    Buffer o(dt, std::vector<float>(8, kSentinel));
    Tensor xt = x.strided({2, 1, 4}, {1, 8, 2});
    Tensor out = o.strided({2, 1, 2}, {4, 4, 2}, 1);  // storage 1, 3, 5, 7
    CHECK(cpu::silu_and_mul(xt, out));
    EXPECT_VALUES(out, {silu_ref(1) * 2, silu_ref(-1) * 3, silu_ref(0.5) * -4,
                        silu_ref(2) * 0.25});
    expect_untouched(o, {0, 2, 4, 6}, __LINE__);
  }
  {  // expanded input: both rows are the same
    Buffer x(dt, {2, -3, 0.5f, 4}), o(dt, std::vector<float>(4));
    Tensor out = o.contiguous({2, 2});
    CHECK(cpu::silu_and_mul(x.contiguous({1, 4}).expand({2, 4}), out));
    const double a = silu_ref(2) * 0.5, b = silu_ref(-3) * 4;
    EXPECT_VALUES(out, {a, b, a, b});
  }
  {
    Buffer x(dt, {1, 2, 3, 4, 5, 6}), o(dt, std::vector<float>(6));
    Tensor odd = o.contiguous({1, 1});
    CHECK(!cpu::silu_and_mul(x.contiguous({2, 3}), odd));  // last dim 3 is odd
    Tensor wrong = o.contiguous({3, 1});
    CHECK(!cpu::silu_and_mul(x.contiguous({2, 3}), wrong));
    Tensor full = o.contiguous({3, 2});
    CHECK(!cpu::silu_and_mul(x.contiguous({3, 2}), full));  // out not halved
    Tensor scalar_out = o.contiguous({});
    CHECK(!cpu::silu_and_mul(x.contiguous({}), scalar_out));  // 0-d input
    Tensor x32 = x.contiguous({3, 2});
    Tensor inside =
        x.contiguous({3, 2}).slice(1, 0, 1);  // out aliases the gate half
    CHECK(!cpu::silu_and_mul(x32, inside));
  }
}

// Every kernel declines dtypes it does not implement (int32, float64, and
// bool, which must never be treated as another dtype), leaving the result to
// PyTorch, and writes nothing.
void test_unsupported_dtypes() {
  for (DataType dt : {DataType::kInt32, DataType::kFloat64, DataType::kBool}) {
    g_context = std::string(to_string(dt));
    const float one = dt == DataType::kInt32 ? 1.0f : 0.0f;
    Buffer a(dt, {one, 0, one, 0}), b(dt, {one, one, 0, 0}),
        o(dt, std::vector<float>(4));
    Tensor ta = a.contiguous({2, 2});
    Tensor tb = b.contiguous({2, 2});
    Tensor out = o.contiguous({2, 2});
    CHECK(!cpu::add(ta, tb, Scalar(1), out));
    CHECK(!cpu::mul(ta, tb, out));
    CHECK(!cpu::silu(ta, out));
    CHECK(!cpu::rms_norm(ta, b.contiguous({2}), 1e-6, out));
    Tensor half_out = o.contiguous({2, 1});
    CHECK(!cpu::silu_and_mul(ta, half_out));
    for (std::size_t i = 0; i < 4; ++i) CHECK(o.get(i) == 0);
  }
}

}  // namespace

// The kernels' result type (core/decline.h): the reason travels with the
// result, dispatch_floating passes its function's result on, a declined
// result destroyed unused is recorded for the dispatch (which raises when
// the kernel then reports success), and one that was tested or moved on is
// not.
void test_kernel_result() {
  using native::KernelResult;
  g_context = "KernelResult";
  CHECK(native::take_dropped_decline() == nullptr);
  {
    KernelResult r = native::decline("why");
    CHECK(!r);
    CHECK(std::string(r.reason()) == "why");
    KernelResult computed = true;
    CHECK(static_cast<bool>(computed) && computed.reason() == nullptr);
    KernelResult bare = false;
    CHECK(std::string(bare.reason()) == KernelResult::kNoReason);
  }
  CHECK(native::g_dropped_declines.load() == 0);

  // dispatch_floating passes a decline of its function on, with its reason.
  Buffer a(DataType::kFloat32, {1, 2, 3}), b(DataType::kFloat32, {1, 2}),
      o(DataType::kFloat32, {kSentinel, kSentinel, kSentinel});
  Tensor out = o.contiguous({3});
  KernelResult inner = cpu::dispatch_floating(DataType::kFloat32, [&](auto tag) {
    return cpu::binary_loop<decltype(tag)>(a.contiguous({3}), b.contiguous({2}), out,
                                           [](float x, float y) { return x + y; });
  });
  CHECK(!inner && std::string(inner.reason()) == "the inputs' shapes do not broadcast");
  CHECK(o.get(0) == kSentinel);  // nothing written
  KernelResult by_bool = cpu::dispatch_floating(DataType::kFloat16, [](auto) { return false; });
  CHECK(!by_bool);
  KernelResult dtype = cpu::dispatch_floating(DataType::kInt32, [](auto) { return true; });
  CHECK(std::string(dtype.reason()) == "the kernel has no code for this dtype");
  CHECK(native::g_dropped_declines.load() == 0);

  // Dropped: recorded, with its reason.
  { (void)native::decline("dropped"); }
  CHECK(native::g_dropped_declines.load() == 1);
  const char* dropped = native::take_dropped_decline();
  CHECK(dropped != nullptr && std::string(dropped) == "dropped");
  CHECK(native::g_dropped_declines.load() == 0);
  // Moved on: only the last owner counts, and it was tested.
  {
    KernelResult first = native::decline("moved");
    KernelResult second = std::move(first);
    CHECK(!second);
  }
  // Moved on and dropped: recorded once, by the last owner.
  {
    KernelResult first = native::decline("moved, dropped");
    KernelResult second = std::move(first);
  }
  dropped = native::take_dropped_decline();
  CHECK(dropped != nullptr && std::string(dropped) == "moved, dropped");
  CHECK(native::g_dropped_declines.load() == 0);
}

int main() {
  // Unbuffered, so the output up to a crash is not lost.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (DataType dt :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    g_context = std::string(to_string(dt));
    test_add(dt);
    test_mul(dt);
    test_silu(dt);
    test_rms_norm(dt);
    test_silu_and_mul(dt);
  }
  test_unsupported_dtypes();
  test_kernel_result();
  return finish("kernels_test");
}
