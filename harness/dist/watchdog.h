// A deadline for a blocking call that has none of its own that holds (a TCPStore client talking
// to some other service blocks in recv for ever): when the scope is not left in time, one line on
// stderr and _exit(1), so the rank fails within --dist-timeout-s and its record says why. No LibTorch.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace trainlab {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds limit, std::string message)
      : message_(std::move(message)), thread_([this, limit] { watch(limit); }) {}
  ~Watchdog() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      left_ = true;
    }
    woken_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (woken_.wait_for(lock, limit, [this] { return left_; })) return;
    const std::string line = "trainlab: " + message_ + "\n";
    ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
    (void)unused;
    ::_exit(1);
  }

  std::string message_;
  std::mutex mutex_;
  std::condition_variable woken_;
  bool left_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace trainlab
