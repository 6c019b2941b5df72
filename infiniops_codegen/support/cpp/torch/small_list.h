#pragma once
// A list that keeps up to N items inside the object and spills to the heap
// beyond: converting a usual list argument (a few tensors, scalars or floats)
// allocates nothing. Header-only and torch-free, for the bindings TU.

#include <cstddef>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

namespace infini::ops::torch_bridge {

template <class T, std::size_t N>
class SmallList {
 public:
  SmallList() noexcept = default;
  SmallList(const SmallList&) = delete;
  SmallList& operator=(const SmallList&) = delete;
  SmallList(SmallList&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    take(other);
  }
  SmallList& operator=(SmallList&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }
  ~SmallList() { clear(); }

  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }

  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow(capacity_ * 2);
    T* slot = ::new (static_cast<void*>(data() + size_)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void push_back(const T& value) { emplace_back(value); }

  T* data() noexcept { return heap_ ? heap_.get() : inline_data(); }
  const T* data() const noexcept { return heap_ ? heap_.get() : inline_data(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }

  operator std::span<const T>() const noexcept { return {data(), size_}; }
  operator std::span<T>() noexcept { return {data(), size_}; }

 private:
  struct Free {
    void operator()(T* p) const noexcept { ::operator delete(p, std::align_val_t{alignof(T)}); }
  };

  T* inline_data() noexcept { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const noexcept {
    return std::launder(reinterpret_cast<const T*>(inline_));
  }

  void grow(std::size_t n) {
    std::unique_ptr<T, Free> bigger(
        static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)})));
    T* old = data();
    for (std::size_t k = 0; k < size_; ++k) {
      ::new (static_cast<void*>(bigger.get() + k)) T(std::move(old[k]));
      old[k].~T();
    }
    heap_ = std::move(bigger);
    capacity_ = n;
  }

  void clear() noexcept {
    T* items = data();
    for (std::size_t k = 0; k < size_; ++k) items[k].~T();
    size_ = 0;
    heap_.reset();
    capacity_ = N;
  }

  // Requires this list to be empty with inline storage.
  void take(SmallList& other) {
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
      size_ = other.size_;
    } else {
      for (std::size_t k = 0; k < other.size_; ++k) {
        ::new (static_cast<void*>(inline_data() + k)) T(std::move(other.inline_data()[k]));
        other.inline_data()[k].~T();
      }
      size_ = other.size_;
    }
    other.size_ = 0;
    other.capacity_ = N;
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  std::unique_ptr<T, Free> heap_;
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace infini::ops::torch_bridge
