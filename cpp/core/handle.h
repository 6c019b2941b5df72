#pragma once

#include <utility>

namespace infini::ops {

// How to reference-count one kind of framework object. A bridge defines one
// static instance per framework; the core never knows what the object is.
struct HandleOps {
  void (*retain)(void*) noexcept;
  void (*release)(void*) noexcept;
};

// An owning, reference-counted, type-erased reference to the framework tensor
// a core Tensor was made from. It stores only two pointers and uses the
// framework's own refcount, so it never allocates: copying a Tensor on the hot
// path stays free of heap traffic.
class SourceHandle {
 public:
  SourceHandle() noexcept = default;

  // Takes over one reference the caller already holds (no retain here).
  // A null ptr yields an empty handle.
  static SourceHandle adopt(const HandleOps* ops, void* ptr) noexcept {
    SourceHandle handle;
    if (ops != nullptr && ptr != nullptr) {
      handle.ops_ = ops;
      handle.ptr_ = ptr;
    }
    return handle;
  }

  SourceHandle(const SourceHandle& other) noexcept
      : ops_(other.ops_), ptr_(other.ptr_) {
    if (ptr_ != nullptr) ops_->retain(ptr_);
  }

  SourceHandle(SourceHandle&& other) noexcept
      : ops_(std::exchange(other.ops_, nullptr)),
        ptr_(std::exchange(other.ptr_, nullptr)) {}

  // Retain before release, so assigning a handle to itself (or to another
  // handle of the same object) never drops the last reference midway.
  SourceHandle& operator=(const SourceHandle& other) noexcept {
    if (other.ptr_ != nullptr) other.ops_->retain(other.ptr_);
    const HandleOps* old_ops = std::exchange(ops_, other.ops_);
    void* old_ptr = std::exchange(ptr_, other.ptr_);
    if (old_ptr != nullptr) old_ops->release(old_ptr);
    return *this;
  }

  SourceHandle& operator=(SourceHandle&& other) noexcept {
    if (this != &other) {
      const HandleOps* old_ops = std::exchange(ops_, other.ops_);
      void* old_ptr = std::exchange(ptr_, other.ptr_);
      other.ops_ = nullptr;
      other.ptr_ = nullptr;
      if (old_ptr != nullptr) old_ops->release(old_ptr);
    }
    return *this;
  }

  ~SourceHandle() { reset(); }

  void reset() noexcept {
    const HandleOps* old_ops = std::exchange(ops_, nullptr);
    void* old_ptr = std::exchange(ptr_, nullptr);
    if (old_ptr != nullptr) old_ops->release(old_ptr);
  }

  void* get() const noexcept { return ptr_; }
  const HandleOps* ops() const noexcept { return ops_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  const HandleOps* ops_ = nullptr;
  void* ptr_ = nullptr;
};

}  // namespace infini::ops
