#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_DECLINE_H_
#define INFINI_OPS_CORE_DECLINE_H_

namespace infini::ops::native {

// Why the last native kernel that declined a call on this thread did so.
// Kernels return decline("...") instead of a bare false; the dispatch reads
// the reason only when implementation="native" was requested (and clears it
// before such a call), to say what is wrong with the call. A static string:
// declining stays free of allocations on the default path.
inline thread_local const char* t_decline_reason = nullptr;

inline bool decline(const char* reason) noexcept {
  t_decline_reason = reason;
  return false;
}

}  // namespace infini::ops::native

#endif  // INFINI_OPS_CORE_DECLINE_H_
