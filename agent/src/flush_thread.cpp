#include "flush_thread.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>

namespace cutriage::agent {

bool FlushThread::start(uint32_t period_ms, std::function<void()> tick) {
  // The thread is born with every signal blocked (it inherits the creating thread's mask, which
  // is restored right after): the application's signals are the application's. One that blocks
  // SIGTERM in its threads and waits for it with sigwait would otherwise be killed by it here.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  const bool masked = pthread_sigmask(SIG_SETMASK, &all, &previous) == 0;
  struct Restore {
    bool active;
    sigset_t* mask;
    ~Restore() {
      if (active) pthread_sigmask(SIG_SETMASK, mask, nullptr);
    }
  } restore{masked, &previous};
  try {
    thread_ = std::thread([this, period_ms, tick = std::move(tick)] {
      pthread_setname_np(pthread_self(), "cutriage-trace");
      std::unique_lock<std::mutex> lock(mutex_);
      while (!stop_) {
        cv_.wait_for(lock, std::chrono::milliseconds(period_ms), [this] { return stop_ || wake_; });
        if (stop_) break;
        wake_ = false;
        lock.unlock();
        tick();
        lock.lock();
      }
    });
  } catch (...) {
    return false;
  }
  id_ = thread_.get_id();
  running_.store(true);
  return true;
}

void FlushThread::wake() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_ = true;
  }
  cv_.notify_one();
}

void FlushThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) {
    try {
      thread_.join();
    } catch (...) {
    }
  }
}

}  // namespace cutriage::agent
