#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_SMALL_DIMS_H_
#define INFINI_OPS_CORE_SMALL_DIMS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace infini::ops {

// Shape/stride storage. Up to kInline entries live inside the object, so
// building and copying the metadata of ordinary tensors never touches the
// heap; longer lists spill to the heap, so there is no hard rank limit.
class Dims {
 public:
  static constexpr std::size_t kInline = 8;

  Dims() noexcept = default;

  // n entries, all equal to value.
  explicit Dims(std::size_t n, int64_t value = 0) {
    int64_t* dst = allocate(n);
    std::fill_n(dst, n, value);
  }

  Dims(std::initializer_list<int64_t> values)
      : Dims(std::span<const int64_t>(values.begin(), values.size())) {}

  explicit Dims(std::span<const int64_t> values) {
    int64_t* dst = allocate(values.size());
    std::copy(values.begin(), values.end(), dst);
  }

  Dims(const Dims& other) : Dims(other.span()) {}

  Dims(Dims&& other) noexcept { steal(other); }

  Dims& operator=(const Dims& other) {
    if (this == &other) return *this;
    // Reuse our own storage when it is large enough: no allocation for the
    // common inline-to-inline copy.
    if (other.size_ <= capacity()) {
      std::copy(other.begin(), other.end(), data());
      size_ = other.size_;
    } else {
      Dims copy(other);
      *this = std::move(copy);
    }
    return *this;
  }

  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      free_heap();
      steal(other);
    }
    return *this;
  }

  ~Dims() { free_heap(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  int64_t* data() noexcept { return heap_ != nullptr ? heap_ : inline_; }
  const int64_t* data() const noexcept {
    return heap_ != nullptr ? heap_ : inline_;
  }

  int64_t& operator[](std::size_t i) noexcept { return data()[i]; }
  int64_t operator[](std::size_t i) const noexcept { return data()[i]; }

  int64_t* begin() noexcept { return data(); }
  int64_t* end() noexcept { return data() + size_; }
  const int64_t* begin() const noexcept { return data(); }
  const int64_t* end() const noexcept { return data() + size_; }

  std::span<const int64_t> span() const noexcept { return {data(), size_}; }

  friend bool operator==(const Dims& a, const Dims& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::size_t capacity() const noexcept {
    return heap_ != nullptr ? heap_capacity_ : kInline;
  }

  // Only called on an empty object (constructors).
  int64_t* allocate(std::size_t n) {
    if (n > kInline) {
      heap_ = new int64_t[n];
      heap_capacity_ = n;
    }
    size_ = n;
    return data();
  }

  void free_heap() noexcept {
    delete[] heap_;
    heap_ = nullptr;
    heap_capacity_ = 0;
    size_ = 0;
  }

  // Requires our heap storage to be freed already.
  void steal(Dims& other) noexcept {
    if (other.heap_ != nullptr) {
      heap_ = other.heap_;
      heap_capacity_ = other.heap_capacity_;
      other.heap_ = nullptr;
      other.heap_capacity_ = 0;
    } else {
      // The whole fixed-size array: a few vector moves instead of a
      // variable-length memmove call (unused slots are
      // initialised: zero or stale values).
      std::copy(other.inline_, other.inline_ + kInline, inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  int64_t* heap_ = nullptr;
  std::size_t heap_capacity_ = 0;
  std::size_t size_ = 0;
  int64_t inline_[kInline] = {};
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_SMALL_DIMS_H_
