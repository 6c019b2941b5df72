/* Counts heap allocations made by one thread, for the allocation test
 * (tests/test_runtime_allocations.py). Loaded with LD_PRELOAD; forwards to
 * glibc's own allocator entry points, so nothing else changes. */
#define _GNU_SOURCE
#include <stddef.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

/* Only the thread that called alloc_counter_start counts: other threads
 * (BLAS servers, the interpreter's helpers) must not add noise. */
static __thread int t_counting;
static __thread long t_count;

void alloc_counter_start(void) {
  t_count = 0;
  t_counting = 1;
}

long alloc_counter_stop(void) {
  t_counting = 0;
  return t_count;
}

static inline void note(void) {
  if (t_counting) ++t_count;
}

void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}

void* calloc(size_t n, size_t size) {
  note();
  return __libc_calloc(n, size);
}

void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}

void* memalign(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}

void* aligned_alloc(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}

int posix_memalign(void** out, size_t alignment, size_t n) {
  note();
  void* p = __libc_memalign(alignment, n);
  if (p == NULL) return 12; /* ENOMEM */
  *out = p;
  return 0;
}

void free(void* p) { __libc_free(p); }
