#pragma once

// Minimal self-checking helpers for the C++ test programs: each failed check
// prints where and what, and finish() makes the exit code non-zero.
#include <cmath>
#include <cstdio>

namespace test {

inline int failures = 0;

}  // namespace test

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ++test::failures;                                                    \
      std::printf("%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                      \
  } while (0)

// Checks that `expr` throws `type` (or a subclass of it).
#define CHECK_THROWS(type, expr)                                              \
  do {                                                                        \
    bool caught_ = false;                                                     \
    try {                                                                     \
      (void)(expr);                                                           \
    } catch (const type&) {                                                   \
      caught_ = true;                                                         \
    } catch (...) {                                                           \
    }                                                                         \
    if (!caught_) {                                                           \
      ++test::failures;                                                       \
      std::printf("%s:%d: expected %s from: %s\n", __FILE__, __LINE__, #type, \
                  #expr);                                                     \
    }                                                                         \
  } while (0)

#define CHECK_NEAR(actual, expected, tol)                                  \
  do {                                                                     \
    const double a_ = (actual);                                            \
    const double e_ = (expected);                                          \
    if (!(std::fabs(a_ - e_) <= (tol))) {                                  \
      ++test::failures;                                                    \
      std::printf(                                                         \
          "%s:%d: CHECK_NEAR failed: %s = %.9g, expected %.9g (tol %g)\n", \
          __FILE__, __LINE__, #actual, a_, e_, static_cast<double>(tol));  \
    }                                                                      \
  } while (0)

inline int finish(const char* name) {
  if (test::failures == 0) {
    std::printf("%s: all checks passed\n", name);
    return 0;
  }
  std::printf("%s: %d check(s) failed\n", name, test::failures);
  return 1;
}
