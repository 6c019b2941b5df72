// Self-checking test of the torch-free core: handle ownership, tensor
// metadata and derivation, Dims storage, Scalar, implementation names and the
// 16-bit float conversions the native kernels rely on.
#include "core/core.h"

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <type_traits>
#include <vector>

#include "check.h"
#include "kernels/cpu/half.h"

// Count every global allocation, so tests can prove the hot-path types do not
// allocate. The array forms are replaced too: a sanitizer runtime provides its
// own operator new[] that would otherwise bypass the count.
static std::size_t g_allocations = 0;

static void* counted_alloc(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace infini::ops;

// A stand-in for a framework tensor with an intrusive refcount.
struct FakeObject {
  int refs = 1;
  int retains = 0;
  int releases = 0;
  int destroyed = 0;  // how often the count reached zero
};

void fake_retain(void* p) noexcept {
  auto* o = static_cast<FakeObject*>(p);
  ++o->refs;
  ++o->retains;
}

void fake_release(void* p) noexcept {
  auto* o = static_cast<FakeObject*>(p);
  ++o->releases;
  if (--o->refs == 0) ++o->destroyed;
}

constexpr HandleOps kFakeOps{&fake_retain, &fake_release};

static_assert(sizeof(SourceHandle) == 2 * sizeof(void*));
static_assert(std::is_nothrow_copy_constructible_v<SourceHandle>);
static_assert(std::is_nothrow_move_constructible_v<SourceHandle>);
static_assert(std::is_nothrow_copy_assignable_v<SourceHandle>);
static_assert(std::is_nothrow_move_assignable_v<SourceHandle>);
static_assert(std::is_nothrow_destructible_v<SourceHandle>);

void test_handle_refcount() {
  FakeObject obj;  // refs = 1: the reference adopt() takes over
  {
    SourceHandle a = SourceHandle::adopt(&kFakeOps, &obj);
    CHECK(static_cast<bool>(a));
    CHECK(a.get() == &obj);
    CHECK(a.ops() == &kFakeOps);
    CHECK(obj.refs == 1 && obj.retains == 0);

    SourceHandle b = a;  // copy shares
    CHECK(obj.refs == 2 && b.get() == &obj);

    SourceHandle c = std::move(b);  // move steals, no refcount traffic
    CHECK(obj.refs == 2 && obj.retains == 1);
    CHECK(!b && b.get() == nullptr && b.ops() == nullptr);
    CHECK(c.get() == &obj);

    // Self-assignment keeps the object alive and the count unchanged.
    SourceHandle& c_ref = c;
    c = c_ref;
    CHECK(obj.refs == 2 && obj.destroyed == 0 && c.get() == &obj);
    c = std::move(c_ref);
    CHECK(obj.refs == 2 && obj.destroyed == 0 && c.get() == &obj);

    // Assigning over a handle releases what it held.
    FakeObject other;
    SourceHandle d = SourceHandle::adopt(&kFakeOps, &other);
    d = c;
    CHECK(other.refs == 0 && other.destroyed == 1);
    CHECK(obj.refs == 3);
    FakeObject third;
    SourceHandle e = SourceHandle::adopt(&kFakeOps, &third);
    e = std::move(d);  // move-assign releases e's old object
    CHECK(third.refs == 0 && third.destroyed == 1);
    CHECK(!d && obj.refs == 3);

    e.reset();
    CHECK(!e && obj.refs == 2);
    e.reset();  // resetting an empty handle is a no-op
    CHECK(obj.refs == 2);
    CHECK(obj.destroyed == 0);
  }
  CHECK(obj.refs == 0);
  CHECK(obj.destroyed == 1);  // the last release happened exactly once
  CHECK(obj.retains + 1 == obj.releases);

  SourceHandle empty = SourceHandle::adopt(&kFakeOps, nullptr);
  CHECK(!empty && empty.ops() == nullptr);
  SourceHandle empty_copy = empty;  // copying empty handles calls nothing
  CHECK(!empty_copy);
}

void fake_no_release(void*) noexcept {}

constexpr HandleOps kFakeBorrowedOps{&fake_retain, &fake_no_release, &kFakeOps};

void test_handle_borrowed() {
  FakeObject obj;  // refs = 1: the lender's reference
  {
    SourceHandle lent = SourceHandle::adopt(&kFakeBorrowedOps, &obj);
    CHECK(lent.borrowed() && lent.ops() == &kFakeBorrowedOps);
    CHECK(obj.refs == 1 && obj.retains == 0);

    // A copy may outlive the borrow: it owns a reference, with owning ops.
    SourceHandle copy = lent;
    CHECK(!copy.borrowed() && copy.ops() == &kFakeOps && obj.refs == 2);
    SourceHandle assigned;
    assigned = lent;
    CHECK(!assigned.borrowed() && assigned.ops() == &kFakeOps && obj.refs == 3);

    // Moving a borrowed handle moves the borrow: no refcount traffic.
    SourceHandle moved = std::move(lent);
    CHECK(moved.borrowed() && obj.refs == 3);
  }
  // The borrowed handle released nothing; the two copies released theirs.
  CHECK(obj.refs == 1 && obj.retains == 2 && obj.releases == 2);
  CHECK(obj.destroyed == 0);
}

void test_handle_no_allocation() {
  FakeObject obj;
  const std::size_t before = g_allocations;
  {
    SourceHandle a = SourceHandle::adopt(&kFakeOps, &obj);
    SourceHandle b = a;
    SourceHandle c = std::move(b);
    b = c;
  }
  CHECK(g_allocations == before);
  CHECK(obj.destroyed == 1);
}

Tensor make_tensor(float* data, FakeObject* obj) {
  return Tensor(data, Dims{2, 3, 4}, Dims{12, 4, 1}, DataType::kFloat32,
                Device{DeviceType::kCpu, 0},
                SourceHandle::adopt(&kFakeOps, obj));
}

void test_tensor_handle_rules() {
  std::vector<float> buffer(24);
  FakeObject obj;
  {
    Tensor t = make_tensor(buffer.data(), &obj);
    CHECK(t.has_handle() && t.handle().get() == &obj);

    Tensor copy = t;  // copies share the handle
    CHECK(copy.has_handle() && obj.refs == 2);
    Tensor moved = std::move(copy);
    CHECK(moved.has_handle() && obj.refs == 2);

    // Every derivation changes the geometry, so none may keep the handle.
    CHECK(!t.slice(0, 0, 1).has_handle());
    CHECK(!t.slice(2, 0, 4, 2).has_handle());
    CHECK(!t.transpose(0, 2).has_handle());
    CHECK(!t.view({6, 4}).has_handle());
    CHECK(!t.view({2, 3, 4}).has_handle());  // even an identical view
    CHECK(!t.expand({5, 2, 3, 4}).has_handle());
    CHECK(!t.offset(0).has_handle());
    CHECK(obj.refs == 2);  // derivations took no reference either

    CHECK(!Tensor::contiguous(buffer.data(), {24}, DataType::kFloat32, {})
               .has_handle());

    // Copying a tensor of <= 8 dims (metadata + handle) never allocates.
    const std::size_t before = g_allocations;
    {
      Tensor c1 = t;
      Tensor c2 = c1;
      Tensor c3 = std::move(c2);
      c1 = c3;
    }
    CHECK(g_allocations == before);
    CHECK(obj.refs == 2);
  }
  CHECK(obj.refs == 0 && obj.destroyed == 1);
}

void test_dims_storage() {
  static_assert(Dims::kInline == 8);
  std::size_t before = g_allocations;
  {
    Dims a{1, 2, 3, 4, 5, 6, 7, 8};
    Dims b = a;
    Dims c = std::move(b);
    Dims d(std::span<const int64_t>(a.data(), a.size()));
    Dims e(8, 7);
    e = a;
    CHECK(c == a && d == a && e == a);
    CHECK(b.size() == 0);  // a moved-from Dims is empty, not garbage
  }
  CHECK(g_allocations == before);

  // Beyond 8 dims the storage spills to the heap and keeps working.
  Dims big{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(g_allocations > before);
  CHECK(big.size() == 10 && big[9] == 10);
  Dims big_copy = big;
  CHECK(big_copy == big);
  big_copy[9] = 11;
  CHECK(big[9] == 10 && !(big_copy == big));

  before = g_allocations;
  Dims stolen = std::move(big_copy);  // a move steals the heap block
  CHECK(g_allocations == before);
  CHECK(stolen.size() == 10 && stolen[9] == 11 && big_copy.size() == 0);

  Dims small{1, 2};
  small = stolen;  // inline -> heap
  CHECK(small == stolen);
  stolen = Dims{4, 5, 6};  // heap -> inline values
  CHECK(stolen.size() == 3 && stolen[2] == 6);
  Dims& self = small;
  small = self;
  CHECK(small.size() == 10 && small[9] == 11);

  int64_t sum = 0;
  for (int64_t v : big) sum += v;
  CHECK(sum == 55);
  CHECK(big.span().size() == 10 && big.span()[4] == 5);
  CHECK(Dims(3).size() == 3 && Dims(3)[2] == 0);
  CHECK(Dims{}.empty());

  // A 12-d tensor: no rank limit.
  Tensor t = Tensor::contiguous(nullptr, Dims(12, 2), DataType::kFloat32, {});
  CHECK(t.ndim() == 12 && t.numel() == 4096 && t.stride(0) == 2048);
  CHECK(t.is_contiguous());
  CHECK(t.transpose(0, 11).stride(11) == 2048);
}

void test_tensor_metadata() {
  std::vector<float> buffer(24);
  float* base = buffer.data();
  Tensor t = Tensor::contiguous(base, {2, 3, 4}, DataType::kFloat32, {});
  CHECK((t.strides() == Dims{12, 4, 1}));
  CHECK(t.ndim() == 3 && t.numel() == 24 && t.element_size() == 4);
  CHECK(t.is_contiguous());
  CHECK(t.size(-1) == 4 && t.size(-3) == 2 && t.stride(-2) == 4);
  CHECK_THROWS(IndexError, t.size(3));
  CHECK_THROWS(IndexError, t.size(-4));
  CHECK_THROWS(IndexError, t.stride(7));
  CHECK_THROWS(IndexError, t.transpose(0, 3));
  CHECK_THROWS(IndexError, t.slice(-4, 0, 1));
  CHECK_THROWS(IndexError,
               Tensor::contiguous(base, {}, DataType::kFloat32, {}).size(0));

  CHECK_THROWS(ValueError, Tensor(base, {2, 3}, {1}, DataType::kFloat32, {}));
  CHECK_THROWS(ValueError, Tensor(base, {-1}, {1}, DataType::kFloat32, {}));

  // Size-1 dims and empty tensors are contiguous whatever their strides.
  CHECK(Tensor(base, {2, 1, 3}, {3, 99, 1}, DataType::kFloat32, {})
            .is_contiguous());
  CHECK(Tensor(base, {2, 0}, {5, 7}, DataType::kFloat32, {}).is_contiguous());
  CHECK(Tensor::contiguous(base, {}, DataType::kFloat32, {}).numel() == 1);
  CHECK(Tensor::contiguous(base, {3, 0, 2}, DataType::kFloat32, {}).numel() ==
        0);
  // Size-0/1 dims count as 1 in row-major strides, as in PyTorch.
  CHECK(
      (Tensor::contiguous(base, {2, 0, 3}, DataType::kFloat32, {}).strides() ==
       Dims{3, 3, 1}));

  Tensor tt = t.transpose(1, -1);
  CHECK((tt.shape() == Dims{2, 4, 3}) && (tt.strides() == Dims{12, 1, 4}));
  CHECK(!tt.is_contiguous() && tt.data() == base);
  CHECK_THROWS(ValueError, tt.view({24}));

  Tensor s = t.slice(2, 1, 4, 2);  // elements 1 and 3 of the last dim
  CHECK((s.shape() == Dims{2, 3, 2}) && (s.strides() == Dims{12, 4, 2}));
  CHECK(s.data() == base + 1 && !s.is_contiguous());
  Tensor s_neg = t.slice(1, -2, INT64_MAX);
  CHECK(s_neg.size(1) == 2 && s_neg.data() == base + 4);
  Tensor s_clamped = t.slice(0, -10, 10);
  CHECK(s_clamped.size(0) == 2 && s_clamped.data() == base);
  CHECK(t.slice(0, 2, 1).size(0) == 0);
  CHECK(t.slice(2, 0, 4, 3).size(2) == 2);
  CHECK_THROWS(ValueError, t.slice(0, 0, 1, 0));
  CHECK_THROWS(ValueError, t.slice(0, 0, 1, -1));

  Tensor v = t.view({4, -1});
  CHECK((v.shape() == Dims{4, 6}) && (v.strides() == Dims{6, 1}));
  CHECK(t.view({24}).ndim() == 1);
  CHECK_THROWS(ValueError, t.view({5, -1}));
  CHECK_THROWS(ValueError, t.view({-1, -1}));
  CHECK_THROWS(ValueError, t.view({25}));
  CHECK_THROWS(ValueError, t.view({-2, 12}));
  CHECK_THROWS(
      ValueError,
      Tensor::contiguous(base, {0, 3}, DataType::kFloat32, {}).view({0, -1}));

  Tensor col = Tensor::contiguous(base, {3, 1}, DataType::kFloat32, {});
  Tensor e = col.expand({2, 3, 4});
  CHECK((e.shape() == Dims{2, 3, 4}) && (e.strides() == Dims{0, 1, 0}));
  CHECK(e.data() == base && !e.is_contiguous());
  Tensor e_keep = col.expand({-1, 5});
  CHECK((e_keep.shape() == Dims{3, 5}) && (e_keep.strides() == Dims{1, 0}));
  CHECK_THROWS(ValueError, col.expand({4, 4}));
  CHECK_THROWS(ValueError, col.expand({3}));
  CHECK_THROWS(ValueError, col.expand({-1, 3, 1}));

  Tensor o = t.offset(5);
  CHECK(o.data() == base + 5 && o.shape() == t.shape() &&
        o.strides() == t.strides());
  CHECK(o.offset(-5).data() == base);
  Tensor h = Tensor::contiguous(base, {4}, DataType::kFloat16, {});
  CHECK(h.offset(3).data() == reinterpret_cast<std::byte*>(base) + 6);
}

void test_scalar() {
  CHECK(Scalar(1).kind() == Scalar::Kind::kInt);
  CHECK(Scalar(int8_t{-3}).to_int() == -3);
  CHECK(Scalar(uint32_t{7}).kind() == Scalar::Kind::kInt);
  CHECK(Scalar(2.5).kind() == Scalar::Kind::kFloat);
  CHECK(Scalar(1.5f).to_double() == 1.5);
  CHECK(Scalar(true).kind() == Scalar::Kind::kBool);
  CHECK(Scalar(std::complex<double>(1, 2)).kind() == Scalar::Kind::kComplex);
  CHECK(Scalar().kind() == Scalar::Kind::kInt && Scalar().to_int() == 0);

  CHECK(Scalar(3).to_double() == 3.0);
  CHECK(Scalar(true).to_double() == 1.0 && Scalar(false).to_int() == 0);
  CHECK(Scalar(2.9).to_int() == 2 && Scalar(-2.9).to_int() == -2);
  CHECK(Scalar(int64_t{1} << 62).to_int() == int64_t{1} << 62);
  CHECK_THROWS(ValueError, Scalar(std::nan("")).to_int());
  CHECK_THROWS(ValueError, Scalar(1e19).to_int());
  CHECK_THROWS(ValueError,
               Scalar(std::numeric_limits<double>::infinity()).to_int());
  CHECK(Scalar(-9223372036854775808.0).to_int() ==
        std::numeric_limits<int64_t>::min());

  CHECK(Scalar(0).to_bool() == false && Scalar(-1).to_bool() == true);
  CHECK(Scalar(0.0).to_bool() == false && Scalar(0.5).to_bool() == true);
  CHECK(Scalar(std::complex<double>(0, 1)).to_bool() == true);

  CHECK(Scalar(std::complex<double>(2, 0)).to_double() == 2.0);
  CHECK_THROWS(TypeError, Scalar(std::complex<double>(2, 1)).to_double());
  CHECK_THROWS(TypeError, Scalar(std::complex<double>(2, 1)).to_int());
  CHECK((Scalar(std::complex<float>(1, -1)).to_complex() ==
         std::complex<double>(1, -1)));
  CHECK((Scalar(4).to_complex() == std::complex<double>(4, 0)));
  CHECK((Scalar(true).to_complex() == std::complex<double>(1, 0)));

  Scalar copy = Scalar(std::complex<double>(3, 4));
  Scalar assigned = 1;
  assigned = copy;
  CHECK((assigned.to_complex() == std::complex<double>(3, 4)));
}

void test_names() {
  CHECK(parse_implementation("default") == Implementation::kDefault);
  CHECK(parse_implementation("native") == Implementation::kNative);
  CHECK(parse_implementation("torch") == Implementation::kTorch);
  CHECK(!parse_implementation("Torch").has_value());
  CHECK(!parse_implementation("").has_value());
  CHECK(!parse_implementation("cuda").has_value());
  for (auto impl : {Implementation::kDefault, Implementation::kNative,
                    Implementation::kTorch}) {
    CHECK(parse_implementation(to_string(impl)) == impl);
  }

  CHECK(to_string(DataType::kFloat32) == "float32");
  CHECK(to_string(DataType::kBFloat16) == "bfloat16");
  CHECK(to_string(DataType::kBool) == "bool");
  CHECK(to_string(DataType::kFloat8E4M3FN) == "float8_e4m3fn");
  CHECK(element_size(DataType::kBool) == 1 &&
        element_size(DataType::kComplex128) == 16);
  CHECK(element_size(DataType::kComplex32) == 4 &&
        element_size(DataType::kBFloat16) == 2);
  CHECK(is_floating_point(DataType::kBFloat16) &&
        !is_floating_point(DataType::kInt32));
  CHECK(!is_floating_point(DataType::kComplex64));
  CHECK(is_integral(DataType::kBool, true) &&
        !is_integral(DataType::kBool, false));
  CHECK(is_integral(DataType::kUInt64, false) &&
        !is_integral(DataType::kFloat16, true));
  CHECK(is_complex(DataType::kComplex32) && !is_complex(DataType::kFloat64));

  CHECK(to_string(DeviceType::kCpu) == "cpu" &&
        to_string(DeviceType::kNvidia) == "nvidia");
  CHECK(to_string(DeviceType::kAscend) == "ascend");
  CHECK((Device{DeviceType::kNvidia, 1} == Device{DeviceType::kNvidia, 1}));
  CHECK(!(Device{DeviceType::kNvidia, 1} == Device{DeviceType::kNvidia, 0}));
  CHECK(!(Device{} == Device{DeviceType::kMetax, -1}));
  CHECK(Device{}.type == DeviceType::kCpu && Device{}.index == -1);
}

// Exact nearest-even bfloat16 rounding computed in double, as a reference.
uint16_t reference_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);  // toward zero
  const uint16_t up = static_cast<uint16_t>(down + 1);      // away from zero
  const double x = std::fabs(static_cast<double>(f));
  const double lo = std::fabs(
      static_cast<double>(std::bit_cast<float>(uint32_t{down} << 16)));
  // Rounding up past the largest finite value gives inf, which IEEE rounds
  // to as if it were the next power of two, 2^128.
  const double hi = (up & 0x7fff) == 0x7f80
                        ? std::ldexp(1.0, 128)
                        : std::fabs(static_cast<double>(
                              std::bit_cast<float>(uint32_t{up} << 16)));
  if (x - lo < hi - x) return down;
  if (x - lo > hi - x) return up;
  return (down & 1) ? up : down;
}

void test_half_conversions() {
  using namespace infini::ops::native::cpu;
  // Every 16-bit pattern survives a round trip through float (NaNs stay NaN).
  int half_bad = 0;
  int bf16_bad = 0;
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float hf = half_to_float(Half{b});
    const float bf = bfloat16_to_float(BFloat16{b});
    const bool half_nan = (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
    const bool bf16_nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    if (half_nan
            ? !std::isnan(hf) || !std::isnan(half_to_float(float_to_half(hf)))
            : float_to_half(hf).bits != b) {
      ++half_bad;
    }
    if (bf16_nan ? !std::isnan(bf) ||
                       !std::isnan(bfloat16_to_float(float_to_bfloat16(bf)))
                 : float_to_bfloat16(bf).bits != b) {
      ++bf16_bad;
    }
  }
  CHECK(half_bad == 0);
  CHECK(bf16_bad == 0);

  // Rounding of arbitrary floats against independent references: the
  // compiler's _Float16 conversion and an exact double computation.
  int half_mismatch = 0;
  int bf16_mismatch = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 997) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    const auto expected_half =
        std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    if (float_to_half(f).bits != expected_half) ++half_mismatch;
    if (!std::isinf(f) && float_to_bfloat16(f).bits != reference_bf16(f))
      ++bf16_mismatch;
  }
  CHECK(half_mismatch == 0);
  CHECK(bf16_mismatch == 0);

  // Hand-picked edges: ties to even, overflow, subnormals, signed zero.
  CHECK(float_to_half(1.0f).bits == 0x3c00);
  CHECK(float_to_half(1.0f + 0x1p-11f).bits == 0x3c00);  // tie -> even (down)
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f).bits == 0x3c02);  // tie -> even (up)
  CHECK(float_to_half(65504.0f).bits == 0x7bff);
  CHECK(float_to_half(65519.0f).bits == 0x7bff);
  CHECK(float_to_half(65520.0f).bits == 0x7c00);
  CHECK(float_to_half(-1e6f).bits == 0xfc00);
  CHECK(float_to_half(0x1p-24f).bits == 0x0001);
  CHECK(float_to_half(0x1p-25f).bits == 0x0000);  // tie -> even (zero)
  CHECK(float_to_half(3 * 0x1p-26f).bits == 0x0001);
  CHECK(float_to_half(-0.0f).bits == 0x8000);
  CHECK(half_to_float(Half{0x0001}) == 0x1p-24f);
  CHECK(half_to_float(Half{0xc000}) == -2.0f);
  const Half nan_half = float_to_half(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan_half.bits & 0x7c00) == 0x7c00 && (nan_half.bits & 0x3ff) != 0);

  CHECK(float_to_bfloat16(1.0f).bits == 0x3f80);
  CHECK(float_to_bfloat16(1.0f + 0x1p-8f).bits == 0x3f80);      // tie -> even
  CHECK(float_to_bfloat16(1.0f + 3 * 0x1p-8f).bits == 0x3f82);  // tie -> even
  CHECK(float_to_bfloat16(std::numeric_limits<float>::max()).bits == 0x7f80);
  CHECK(float_to_bfloat16(-std::numeric_limits<float>::infinity()).bits ==
        0xff80);
  // A NaN whose payload lives only in the low 16 bits must not become inf.
  const float low_nan = std::bit_cast<float>(0x7f800001u);
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(low_nan))));
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(-low_nan))));
  CHECK(std::isnan(half_to_float(float_to_half(low_nan))));
}

}  // namespace

int main() {
  // Unbuffered, so the output up to a crash is not lost.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  test_handle_refcount();
  test_handle_borrowed();
  test_handle_no_allocation();
  test_tensor_handle_rules();
  test_dims_storage();
  test_tensor_metadata();
  test_scalar();
  test_names();
  test_half_conversions();
  return finish("core_test");
}
