// Status-style errors for every boundary of the agent and its collectors. No exception crosses a
// CUPTI callback or the C API: functions that can fail return Status or Result<T>. The collectors
// and the agent know these as collectors::Status, collectors::Result (cutriage/collectors/status.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cutriage::base {

enum class StatusCode : int {
  kOk = 0,
  kUnavailable,           // no GPU, no driver, CUPTI missing: nothing to profile
  kPermissionDenied,      // counters need root / CAP_SYS_ADMIN / CAP_PERFMON
  kAlreadySubscribed,     // another CUPTI subscriber (nsys, ncu, torch.profiler) holds CUPTI
  kInvalidArgument,       // e.g. a metric name the chip does not have
  kNotSupported,          // e.g. a launch kind the range profiler must not wrap
  kInternal,              // a CUPTI or driver call failed unexpectedly
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  [[nodiscard]] bool is_ok() const { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)), status_() {}            // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}    // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool is_ok() const { return value_.has_value(); }
  [[nodiscard]] const Status& status() const { return status_; }
  [[nodiscard]] T& value() & { return *value_; }
  [[nodiscard]] const T& value() const& { return *value_; }
  [[nodiscard]] T&& value() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_{StatusCode::kInternal, "no value"};
};

const char* to_string(StatusCode code);

}  // namespace cutriage::base
