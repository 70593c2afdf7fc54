#include "runtime/threadpool.h"

namespace tg {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    generation_++;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(uint64_t gen, int n, const std::function<void(int)>* fn) {
  for (;;) {
    uint64_t t = ticket_.load();
    do {
      if ((t >> 32) != (gen & 0xffffffffu) || int(t & 0xffffffffu) >= n) return;
    } while (!ticket_.compare_exchange_weak(t, t + 1));
    try {
      (*fn)(int(t & 0xffffffffu));
    } catch (...) {
      std::lock_guard lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    int n;
    const std::function<void(int)>* fn;
    // spin a little before sleeping: kernels usually come in bursts
    for (int spin = 0; spin < 2000 && generation_.load(std::memory_order_acquire) == seen; spin++) std::this_thread::yield();
    {
      std::unique_lock lk(mu_);
      wake_.wait(lk, [&] { return generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
      n = n_, fn = fn_;
    }
    work(seen, n, fn);
  }
}

void ThreadPool::run(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  std::lock_guard run_lk(run_mu_);
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; i++) fn(i);
    return;
  }
  uint64_t gen;
  {
    std::lock_guard lk(mu_);
    n_ = n, fn_ = &fn, error_ = nullptr;
    done_ = 0;
    gen = ++generation_;
    ticket_ = (gen & 0xffffffffu) << 32;
  }
  wake_.notify_all();
  work(gen, n, &fn);
  while (done_.load(std::memory_order_acquire) < n) std::this_thread::yield();
  std::lock_guard lk(mu_);
  if (error_) std::rethrow_exception(error_);
}

}  // namespace tg
