#include "deep_capture.h"

#include "control.h"

namespace cutriage::agent {

uint64_t DeepCaptures::request(wire::ControlSource source, const std::string& target, uint32_t seconds,
                                     std::string* error) {
  wire::ControlRequest req;
  req.source = source;
  req.target = target.empty() ? p_.config.deep_target : target;
  req.window_seconds = seconds == 0 ? p_.config.deep_seconds : seconds;
  req.requested_unix_ns = p_.now_unix_ns();
  std::string why;
  std::optional<DeepTarget> parsed;
  if (!p_.accepting()) {
    why = "the agent is not profiling";
  } else if (p_.config.mode == AgentMode::kDeep && p_.config.replay == Replay::kApplication) {
    why = "CUTRIAGE_REPLAY=application: no launch is replayed in this process, and a deep capture replays one";
  } else if (seconds > 3600) {
    why = "the window must be 1 to 3600 seconds";
  } else {
    parsed = parse_deep_target(req.target, p_.config.kernel_filter.base(), &why);
  }
  // A refused request is written and said once per reason: an application calling in a loop must
  // not fill the file or the log.
  bool first_of_kind = true;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    std::optional<DeepWindow>& deep = p_.selector.deep_locked();
    req.id = next_request_id_++;
    if (why.empty() && deep) why = "deep capture " + std::to_string(deep->request.id) + " is still open";
    if (why.empty() && parsed.has_value()) {  // parsed whenever nothing was refused
      req.state = wire::ControlState::kStarted;
      DeepWindow window;
      window.request = req;
      window.top = parsed->top;
      window.filter = std::move(parsed->filter);
      window.end_mono_ns = p_.monotonic_ns() + uint64_t{static_cast<uint32_t>(req.window_seconds)} * 1000000000ULL;
      deep = std::move(window);
      p_.selector.set_deep_open(true);
      p_.selector.update_all_locked();
    } else {
      req.state = wire::ControlState::kRejected;
      req.detail = why;
      req.ended_unix_ns = req.requested_unix_ns;
      first_of_kind = control_errors_.count(why) == 0 && admit_refusal_locked(source);
      if (first_of_kind) control_errors_.insert(why);
    }
  }
  if (first_of_kind) p_.output.write_control(req);
  if (!why.empty()) {
    if (error != nullptr) *error = why;
    // Info, not a warning: the caller has the answer (0) and the output has the record.
    if (first_of_kind) p_.log.info("deep capture refused: " + why);
    return 0;
  }
  p_.log.info("deep capture " + std::to_string(req.id) + " of " + req.target + " for " +
            std::to_string(static_cast<int>(req.window_seconds)) + " s");
  return req.id;
}

bool DeepCaptures::admit_refusal_locked(wire::ControlSource source) {
  if (refusals_written_ < kMaxRefusalsWritten) {
    ++refusals_written_;
    return true;
  }
  ignored_source_ = source;
  if (refusals_ignored_++ == 0) {
    p_.log.warn("more than " + std::to_string(kMaxRefusalsWritten) +
                " deep-capture requests refused: the next ones are counted, not written or logged "
                "(the count comes at exit)");
  }
  return false;
}

void DeepCaptures::report_ignored() {
  wire::ControlRequest summary;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    if (refusals_ignored_ == ignored_reported_) return;
    const uint64_t ignored = refusals_ignored_ - ignored_reported_;
    ignored_reported_ = refusals_ignored_;
    summary.id = next_request_id_++;
    summary.source = ignored_source_;
    summary.state = wire::ControlState::kRejected;
    summary.requested_unix_ns = p_.now_unix_ns();
    summary.ended_unix_ns = summary.requested_unix_ns;
    summary.detail = std::to_string(ignored) + " more refused request" + (ignored == 1 ? "" : "s") +
                     " ignored (only the first " + std::to_string(kMaxRefusalsWritten) + " are written)";
  }
  p_.output.write_control(summary);
  p_.log.warn("deep capture: " + summary.detail);
}

void DeepCaptures::check() {
  if (p_.finished()) report_ignored();
  if (!p_.selector.deep_open()) return;  // the flush thread asks every tick
  wire::ControlRequest done;
  {
    std::lock_guard<std::mutex> lock(p_.families.mutex());
    std::optional<DeepWindow>& deep = p_.selector.deep_locked();
    if (!deep) return;
    const uint64_t now = p_.monotonic_ns();
    // Everything targeted is captured: the top N all profiled (and sampled); a name filter's
    // families are not known in advance, so its window runs to the end.
    bool complete = false;
    if (deep->top > 0) {
      uint32_t targeted = 0;
      uint32_t finished = 0;
      for (const Family* f : p_.families.all_locked()) {
        if (f->rank == 0 || f->rank > deep->top) continue;
        ++targeted;
        const bool sampled = !p_.config.pc_sampling || deep->sampled.count(f->family_id) > 0;
        if (deep->captured.count(f->family_id) > 0 && sampled) ++finished;
      }
      complete = targeted > 0 && finished == targeted;
    }
    if (!complete && now < deep->end_mono_ns && !p_.finished()) return;
    done = deep->request;
    done.state = complete ? wire::ControlState::kCompleted : wire::ControlState::kExpired;
    done.ended_unix_ns = p_.now_unix_ns();
    done.family_ids.assign(deep->captured.begin(), deep->captured.end());
    for (const Family* f : p_.families.all_locked()) {
      if (f->deep_request == done.id && f->last_record && f->last_record->status == wire::ProfileStatus::kProfiled) {
        ++done.profiled_launches;
      }
    }
    if (done.family_ids.empty()) done.detail = "no targeted family was launched in the window";
    deep.reset();
    p_.selector.set_deep_open(false);
    p_.selector.update_all_locked();
  }
  p_.output.write_control(done);
}

void DeepCaptures::poll() {
  if (take_control_signal()) {
    std::string error;
    (void)request(wire::ControlSource::kSignal, "", 0, &error);
  }
  if (p_.config.control_file.empty()) return;
  std::string error;
  std::optional<std::string> text = take_control_file(p_.config.control_file, &error);
  if (!error.empty()) {
    p_.log.log_once(LogLevel::kWarn, "control-file: " + error, error);
    return;
  }
  if (!text) return;
  std::optional<DeepRequest> req = parse_control_command(*text, &error);
  if (!req) {
    wire::ControlRequest rejected;
    rejected.source = wire::ControlSource::kFile;
    rejected.state = wire::ControlState::kRejected;
    rejected.requested_unix_ns = p_.now_unix_ns();
    rejected.ended_unix_ns = rejected.requested_unix_ns;
    rejected.detail = p_.config.control_file + ": " + error;
    {
      std::lock_guard<std::mutex> lock(p_.families.mutex());
      if (!admit_refusal_locked(wire::ControlSource::kFile)) return;
      rejected.id = next_request_id_++;
    }
    p_.output.write_control(rejected);
    p_.log.warn("control file " + p_.config.control_file + ": " + error);
    return;
  }
  (void)request(wire::ControlSource::kFile, req->target, req->seconds, &error);
}

}  // namespace cutriage::agent
