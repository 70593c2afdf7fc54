#pragma once
// A persistent pool of worker threads. run(n, fn) calls fn(0..n-1) in parallel, the calling thread included, and
// returns when all calls are done. After a job the workers poll for the next one for spin_us microseconds before they
// sleep: kernels come back to back, and waking a sleeping thread costs tens of microseconds (a vCPU's wake-up in a VM),
// more than a small kernel's half.
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tg {

class ThreadPool {
 public:
  explicit ThreadPool(int threads, int spin_us = 0);  // threads: total including the caller; at least 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // fn(i) for every i in [0, n); rethrows the first exception one of them threw
  void run(int n, const std::function<void(int)>& fn);

 private:
  void worker_loop();
  void work(uint32_t gen);  // claims indices of job `gen` until none are left
  std::vector<std::thread> workers_;
  int spin_us_;
  std::mutex run_mu_;  // one run at a time
  // a job is published as fn_, then ticket_, then generation_. A worker claims an index from ticket_ alone (the job's
  // generation, its size and the next index in one word), and reads fn_ only after its claim succeeded: the job cannot
  // end, and fn_ be replaced, before that index is done
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> ticket_{0};  // (generation << 32) | (n << 16) | next index; n < 2^16
  std::atomic<const std::function<void(int)>*> fn_{nullptr};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace tg
