#pragma once
// A persistent pool of worker threads. run(n, fn) calls fn(0..n-1) in parallel, the calling thread included, and
// returns when all calls are done. Workers spin briefly after a job, then sleep, so back-to-back kernels start fast.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tg {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // total threads including the caller; at least 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // fn(i) for every i in [0, n); rethrows the first exception one of them threw
  void run(int n, const std::function<void(int)>& fn);

 private:
  void worker_loop();
  void work(uint64_t gen, int n, const std::function<void(int)>* fn);  // claims indices of job `gen` until none are left
  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one run at a time
  std::mutex mu_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> ticket_{0};  // (generation << 32) | next index: a late worker cannot claim a newer job's index
  std::atomic<int> done_{0};
  int n_ = 0;  // n_ and fn_ are written and read under mu_
  const std::function<void(int)>* fn_ = nullptr;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace tg
