#pragma once

#include <stdexcept>

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

// A Python int too large for the C++ type (Python's OverflowError).
class OverflowError : public Error {
 public:
  using Error::Error;
};

}  // namespace infini::ops
