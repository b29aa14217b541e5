// The agent's own thread: wakes every period to run the periodic work the coordinator gives it
// (collect the trace, the duty cycle, the control input, releases, the Prometheus file), so that
// none of it runs on the application's threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace cutriage::agent {

class FlushThread {
 public:
  FlushThread() = default;
  ~FlushThread() { stop(); }
  FlushThread(const FlushThread&) = delete;
  FlushThread& operator=(const FlushThread&) = delete;

  // Runs `tick` every `period_ms` until stop(). False when the thread cannot start.
  bool start(uint32_t period_ms, std::function<void()> tick);
  // Wakes the thread and waits for it to end; idempotent.
  void stop();
  // Runs the next tick now instead of at the end of the period (work queued for it that a
  // launch may soon wait for). Never blocks on the tick.
  void wake();
  [[nodiscard]] bool running() const { return running_.load(); }
  // Set once the thread runs, never cleared (after stop() it stays set: the thread's work is not
  // taken over by application threads at the end).
  [[nodiscard]] const std::atomic<bool>& running_flag() const { return running_; }
  // Whether the caller is this thread (work done here is not the application's time).
  [[nodiscard]] bool on_thread() const { return running_.load() && std::this_thread::get_id() == id_; }

 private:
  std::thread thread_;
  std::thread::id id_;  // written before running_ is set
  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;  // a tick was asked for before the period ends
};

}  // namespace cutriage::agent
