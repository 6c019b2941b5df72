#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_ERROR_H_
#define INFINI_OPS_CORE_ERROR_H_

#include <stdexcept>
#include <string>
#include <utility>

namespace infini::ops {

// Library errors. The bridge maps each to the Python exception of the same
// name (Error -> RuntimeError). The specific kinds derive from Error, so
// `catch (const Error&)` sees all of them; a translator must therefore test
// the most derived types first.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TypeError : public Error {
 public:
  using Error::Error;
};

class ValueError : public Error {
 public:
  using Error::Error;
};

class IndexError : public Error {
 public:
  using Error::Error;
};

class NotImplementedError : public Error {
 public:
  using Error::Error;
};

// An implementation that was asked for and cannot run (Implementation::kNative
// without a native kernel that takes the call). what() names the choices as a
// C++ caller spells them (Implementation::kTorch); python() as the Python
// keyword does (implementation='torch'), which the bridge raises instead.
class ImplementationError : public NotImplementedError {
 public:
  ImplementationError(const std::string& cpp, std::string python)
      : NotImplementedError(cpp), python_(std::move(python)) {}
  const char* python() const noexcept { return python_.c_str(); }

 private:
  std::string python_;
};

// A Python int too large for the C++ type (Python's OverflowError).
class OverflowError : public Error {
 public:
  using Error::Error;
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_ERROR_H_
