#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_HANDLE_H_
#define INFINI_OPS_CORE_HANDLE_H_

#include <cstdint>
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
//
// `framework` tags every instance of one bridge (owning, borrowing, opaque),
// so a bridge recognises its own handles with one comparison.
//
// An *opaque* instance marks a framework object whose memory the library must
// not address: its data pointer is meaningless (a fake or meta tensor, a
// wrapper of another transform, a tensor under an active framework mode, ...)
// and only the framework itself may compute on it. Such a Tensor has no data
// pointer; native kernels and raw-pointer paths never see it.
struct HandleOps {
  void (*retain)(void*) noexcept;
  void (*release)(void*) noexcept;
  const HandleOps* owning = nullptr;  // null: these ops own
  const void* framework = nullptr;    // same for all instances of one bridge
  bool opaque = false;
  // Called after the library itself wrote the object's memory (a native
  // kernel, or a copy the framework did not see), so the framework can record
  // the write as its own operations would (torch: the version counter).
  void (*written)(void*, int64_t times) = nullptr;

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
  bool opaque() const noexcept { return ops_ != nullptr && ops_->opaque; }
  // Tells the framework its object was written `times` times (see HandleOps).
  void written(int64_t times = 1) const {
    if (ptr_ != nullptr && ops_->written != nullptr && times > 0) ops_->written(ptr_, times);
  }

 private:
  const HandleOps* ops_ = nullptr;
  void* ptr_ = nullptr;
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_HANDLE_H_
