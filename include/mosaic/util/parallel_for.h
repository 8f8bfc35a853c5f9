// A parallel loop over indexes for work whose results land in slots of their own (one per index),
// so that the result does not depend on the number of threads or on which thread ran what.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "mosaic/util/error.h"

namespace mosaic {

// The number of threads `threads` asks for: itself when positive, otherwise one per hardware
// thread (at least 1).
inline int ThreadCount(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The most threads a job may be asked for (`--threads`, the Python package's `threads`).
inline constexpr int kMaxThreads = 1024;

// Throws InputError "threads = N. Violated constraint: 1 <= threads <= 1024" unless
// 1 <= threads <= kMaxThreads.
inline void CheckThreadCount(int threads) {
  if (threads < 1 || threads > kMaxThreads) {
    throw InputError("threads = " + std::to_string(threads) +
                     ". Violated constraint: 1 <= threads <= " + std::to_string(kMaxThreads));
  }
}

// Calls body(i) for every i in [0, n) on min(n, max(threads, 1)) threads, the calling thread one
// of them (fewer when the system cannot start that many; the result is the same); each takes the
// next index from a shared counter (so put the longest work first). When a call throws, no
// further index is started and the first exception is rethrown once every thread has stopped.
template <typename Body>
void ParallelFor(size_t n, int threads, Body body) {
  const size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // the system has no more threads to give: the ones started share the work
    }
  }
  work();
  for (std::thread& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace mosaic
