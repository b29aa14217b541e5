// The agent inside the profiled process: sees every launch through the collector callbacks,
// selects launches to profile, wraps them in the range profiler, triages each kernel when its data
// is complete, appends the records, and prints the summary at exit.
//
// Threading: callbacks arrive on the application's threads, several at once. Shared state sits
// behind `mutex_`; it is never held while a kernel runs. A profiled launch holds its context's
// `busy` flag from launch entry to launch exit (same thread); a second selected launch on that
// context meanwhile is left unprofiled rather than waited for, so the agent never blocks one
// application thread on another.
//
// Errors: nothing throws out of a callback. A failing CUPTI call marks that kernel's record
// FAILED and the agent goes on; a failure that makes profiling impossible (no permission, another
// subscriber) is said once and the application runs on unprofiled.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config.h"
#include "cutriage/collectors/platform.h"
#include "cutriage/triage/engine.h"
#include "cutriage/wire/records.h"
#include "cutriage/wire/writer.h"
#include "log.h"
#include "output.h"

namespace cutriage::agent {

inline constexpr const char* kAgentVersion = "0.1.0";

// What the agent knows about the process it runs in.
struct ProcessInfo {
  uint64_t pid = 0;
  std::string host;
  std::vector<std::string> command_line;
  std::function<uint64_t()> now_unix_ns;  // wall clock; tests pass a fake
};

// One kernel as the summary shows it.
struct KernelSummary {
  std::string function_name;
  std::string mangled_name;
  uint32_t device = 0;
  wire::KernelLaunchStats stats;
  std::optional<triage::Diagnosis> diagnosis;  // latest, over all combined launches
  wire::ProfileStatus last_status = wire::ProfileStatus::kUnspecified;
  std::string last_status_detail;
  std::vector<std::string> uncollected;  // counters the route still wanted when profiling stopped
};

class Agent final : public collectors::LaunchObserver {
 public:
  // `platform` and `log` must outlive the agent. `sink` receives the file's bytes.
  Agent(AgentConfig config, collectors::Platform& platform, std::unique_ptr<RecordSink> sink,
        Logger& log, ProcessInfo process, triage::Thresholds thresholds = {});
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Subscribes to the callbacks. False when the agent stays off (the reason was logged once).
  bool start();
  // Writes the session end and prints the summary. Idempotent; safe after the contexts are gone.
  void finish();

  void on_context_created(const collectors::ContextEvent& event) override;
  void on_context_destroying(const collectors::ContextEvent& event) override;
  void on_module_loaded(const collectors::ModuleEvent& event) override;
  void on_launch_enter(const collectors::LaunchEvent& event) override;
  void on_launch_exit(const collectors::LaunchEvent& event) override;

  [[nodiscard]] wire::AgentState state() const { return state_.load(); }
  [[nodiscard]] std::vector<KernelSummary> kernels() const;
  [[nodiscard]] wire::SessionEnd session_end() const;
  [[nodiscard]] std::string output_path() const { return sink_ ? sink_->describe() : ""; }

 private:
  struct ContextState;
  struct KernelState;
  struct ActiveProfile;
  struct NameInfo;

  // The profiled launch in flight on the calling thread (entry to exit); null when none.
  static std::unique_ptr<ActiveProfile>& active_slot();
  void launch_enter(const collectors::LaunchEvent& event);
  void launch_exit(const collectors::LaunchEvent& event);
  // Decides under mutex_ whether this launch is profiled and with which counters.
  std::optional<std::vector<std::string>> select(const collectors::LaunchEvent& event,
                                                 const std::string& chip, KernelState*& kernel,
                                                 uint64_t& launch_index);
  std::shared_ptr<ContextState> context_for(const collectors::LaunchEvent& event);
  std::shared_ptr<collectors::ProfilerHost> host_for(const std::string& chip, std::string* error);
  std::optional<collectors::DeviceInfo> device_info(uint32_t device);
  void complete_profile(ActiveProfile& active, const collectors::LaunchEvent& event);
  void record_failure(ActiveProfile& active, const std::string& what);
  void record_unprofiled(const collectors::LaunchEvent& event, KernelState& kernel,
                         wire::ProfileStatus status, const std::string& detail);
  void write_kernel(const wire::KernelRecord& record);
  void write_notice(wire::Severity severity, const std::string& code, const std::string& message);
  void write_bytes_locked(const std::string& bytes);  // output_mutex_ held
  void ensure_header_locked();                         // output_mutex_ held
  void set_inactive(wire::AgentState state, const std::string& detail);
  void fill_kernel_input(const collectors::LaunchEvent& event, const KernelState& kernel,
                         uint64_t launch_index, triage::KernelInput& input);

  AgentConfig config_;
  collectors::Platform& platform_;
  std::unique_ptr<RecordSink> sink_;
  Logger& log_;
  ProcessInfo process_;
  triage::TriageOptions triage_options_;
  uint64_t start_time_ns_ = 0;

  std::atomic<wire::AgentState> state_{wire::AgentState::kActive};
  std::atomic<bool> finished_{false};
  std::atomic<bool> subscribed_{false};

  mutable std::mutex mutex_;  // everything below until output_mutex_
  std::string state_detail_;
  std::map<uint64_t, std::shared_ptr<ContextState>> contexts_;
  std::map<uint32_t, collectors::DeviceInfo> devices_;
  std::set<uint32_t> devices_failed_;
  std::map<std::string, std::shared_ptr<collectors::ProfilerHost>> hosts_;  // by chip
  std::set<std::string> hosts_failed_;
  std::map<std::string, std::shared_ptr<NameInfo>> names_;  // by mangled name
  std::map<std::pair<std::string, uint32_t>, std::unique_ptr<KernelState>> kernels_;
  uint64_t launch_counter_ = 0;
  uint64_t matching_launches_ = 0;
  uint64_t profiles_started_ = 0;
  wire::SessionEnd totals_;
  uint64_t modules_loaded_ = 0;
  uint64_t contexts_seen_ = 0;

  std::mutex output_mutex_;  // the encoder (interning) and the sink
  wire::RecordEncoder encoder_;
  bool header_written_ = false;
};

}  // namespace cutriage::agent
