#include "runtime/threadpool.h"

#include <algorithm>
#include <chrono>

namespace tg {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

ThreadPool::ThreadPool(int threads, int spin_us) : spin_us_(spin_us) {
  for (int i = 1; i < threads; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_ = true;
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(uint32_t gen) {
  for (;;) {
    uint64_t t = ticket_.load();
    do {
      if (uint32_t(t >> 32) != gen || (t & 0xffff) >= ((t >> 16) & 0xffff)) return;
    } while (!ticket_.compare_exchange_weak(t, t + 1));
    try {
      (*fn_.load())(int(t & 0xffff));
    } catch (...) {
      std::lock_guard lk(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    using clock = std::chrono::steady_clock;
    auto pause_until = clock::now() + std::chrono::microseconds(std::min(spin_us_, 50));
    auto until = pause_until + std::chrono::microseconds(std::max(spin_us_ - 50, 0));
    bool yielding = false;
    for (int i = 1; generation_.load(std::memory_order_acquire) == seen; i++) {
      // pause first (the next kernel is usually microseconds away), then yield: a loaded machine's other processes run
      if (!yielding) {
        cpu_relax();
        if ((i & 63) != 0 || clock::now() < pause_until) continue;
        yielding = true;
      }
      std::this_thread::yield();
      if ((i & 15) == 0 && clock::now() >= until) {
        // sleepers_ before the generation's check inside wait, run() bumps the generation before reading sleepers_
        // (both sequentially consistent): either this thread sees the new job or run() sees it asleep and wakes it
        sleepers_.fetch_add(1);
        generation_.wait(seen);
        sleepers_.fetch_sub(1);
      }
    }
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    work(seen);
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  std::lock_guard run_lk(run_mu_);
  if (workers_.empty() || n == 1 || n > 0xffff) {
    for (int i = 0; i < n; i++) fn(i);
    return;
  }
  error_ = nullptr;
  done_.store(0, std::memory_order_relaxed);
  fn_.store(&fn);
  uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  ticket_.store(uint64_t(gen) << 32 | uint64_t(n) << 16);
  generation_.store(gen);
  if (sleepers_.load() > 0) generation_.notify_all();
  work(gen);
  while (done_.load(std::memory_order_acquire) < n) cpu_relax();
  std::lock_guard lk(error_mu_);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tg
