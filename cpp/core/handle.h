#pragma once

#include <utility>

namespace infini::ops {

// How to reference-count one kind of framework object. A bridge defines one
// static instance per framework; the core never knows what the object is.
//
// A bridge may add a *borrowing* instance (release does nothing, `owning`
// names the owning instance) for handles it knows are kept alive by their
// caller for as long as the handle exists, e.g. during one call. Copying a
// borrowing handle takes a real reference with the owning ops, so a copy may
// outlive the borrow.
struct HandleOps {
  void (*retain)(void*) noexcept;
  void (*release)(void*) noexcept;
  const HandleOps* owning = nullptr;  // null: these ops own

  const HandleOps* for_copy() const noexcept {
    return owning != nullptr ? owning : this;
  }
};

// An owning, reference-counted, type-erased reference to the framework tensor
// a core Tensor was made from. It stores only two pointers and uses the
// framework's own refcount, so it never allocates: copying a Tensor on the hot
// path stays free of heap traffic.
class SourceHandle {
 public:
  SourceHandle() noexcept = default;

  // Takes over one reference the caller already holds (no retain here), or
  // borrows one with borrowing ops. A null ptr yields an empty handle.
  static SourceHandle adopt(const HandleOps* ops, void* ptr) noexcept {
    SourceHandle handle;
    if (ops != nullptr && ptr != nullptr) {
      handle.ops_ = ops;
      handle.ptr_ = ptr;
    }
    return handle;
  }

  SourceHandle(const SourceHandle& other) noexcept
      : ops_(other.ops_ != nullptr ? other.ops_->for_copy() : nullptr),
        ptr_(other.ptr_) {
    if (ptr_ != nullptr) ops_->retain(ptr_);
  }

  SourceHandle(SourceHandle&& other) noexcept
      : ops_(std::exchange(other.ops_, nullptr)),
        ptr_(std::exchange(other.ptr_, nullptr)) {}

  // Retain before release, so assigning a handle to itself (or to another
  // handle of the same object) never drops the last reference midway.
  SourceHandle& operator=(const SourceHandle& other) noexcept {
    const HandleOps* new_ops = nullptr;
    if (other.ptr_ != nullptr) {
      new_ops = other.ops_->for_copy();
      new_ops->retain(other.ptr_);
    }
    const HandleOps* old_ops = std::exchange(ops_, new_ops);
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
  // Borrowed (not owning): valid only while its lender keeps the object.
  bool borrowed() const noexcept { return ops_ != nullptr && ops_->owning != nullptr; }

 private:
  const HandleOps* ops_ = nullptr;
  void* ptr_ = nullptr;
};

}  // namespace infini::ops
