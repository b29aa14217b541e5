// cupti_check.h: CUptiResult -> Status mapping and the macros other collector code builds on.
// Pure functions of CUPTI's result codes: no GPU, no driver.
#include <cupti_result.h>

#include <string>

#include "catch.h"
#include "cuda_driver_probe.h"
#include "cupti_check.h"
#include "cutriage/collectors/range_profiler.h"

// Unity batches (tests/CMakeLists.txt): what this file names stays in its own namespace.
namespace test_cupti_check {

using cutriage::collectors::cupti_status;
using cutriage::collectors::Result;
using cutriage::collectors::Status;
using cutriage::collectors::StatusCode;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CUptiResult fake_call(CUptiResult result) { return result; }

Status status_function(CUptiResult result, int* reached_end) {
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(fake_call(result));
  ++*reached_end;
  return Status::ok();
}

Result<int> result_function(CUptiResult result) {
  CUTRIAGE_CUPTI_RETURN_IF_ERROR(fake_call(result));
  return 42;
}

Result<int> doubled(CUptiResult result) {
  CUTRIAGE_ASSIGN_OR_RETURN(const int value, result_function(result));
  return value * 2;
}

Status propagated(CUptiResult result) {
  int reached = 0;
  CUTRIAGE_RETURN_IF_ERROR(status_function(result, &reached));
  return Status::ok();
}

}  // namespace

TEST_CASE("cupti_status: success is ok", "[collectors][cupti_check]") {
  CHECK(cupti_status(CUPTI_SUCCESS, "cuptiX(&p)").is_ok());
  CHECK(CUTRIAGE_CUPTI_STATUS(fake_call(CUPTI_SUCCESS)).is_ok());
}

TEST_CASE("cupti_status: missing privileges say how to fix them", "[collectors][cupti_check]") {
  const Status s = CUTRIAGE_CUPTI_STATUS(fake_call(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES));
  CHECK(s.code() == StatusCode::kPermissionDenied);
  CHECK(contains(s.message(), "fake_call(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)"));  // the call text
  CHECK(contains(s.message(), ": CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));            // CUPTI's name
  CHECK(contains(s.message(), "root"));
  CHECK(contains(s.message(), "CAP_SYS_ADMIN"));
  CHECK(contains(s.message(), "CAP_PERFMON"));
  CHECK(contains(s.message(), "NVreg_RestrictProfilingToAdminUsers=0"));
}

TEST_CASE("cupti_status: maps results to status codes", "[collectors][cupti_check]") {
  const Status subscribed = cupti_status(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "cuptiSubscribe");
  CHECK(subscribed.code() == StatusCode::kAlreadySubscribed);
  CHECK(contains(subscribed.message(), "cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
  CHECK(contains(subscribed.message(), "Nsight"));

  CHECK(cupti_status(CUPTI_ERROR_NOT_INITIALIZED, "x").code() == StatusCode::kUnavailable);
  CHECK(cupti_status(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "x").code() == StatusCode::kUnavailable);
  CHECK(cupti_status(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, "x").code() == StatusCode::kUnavailable);
  CHECK(cupti_status(CUPTI_ERROR_INVALID_METRIC_NAME, "x").code() == StatusCode::kInvalidArgument);
  CHECK(cupti_status(CUPTI_ERROR_INVALID_CHIP_NAME, "x").code() == StatusCode::kInvalidArgument);
  CHECK(cupti_status(CUPTI_ERROR_NOT_SUPPORTED, "x").code() == StatusCode::kNotSupported);
  CHECK(cupti_status(CUPTI_ERROR_INVALID_PARAMETER, "x").code() == StatusCode::kInternal);
  CHECK(cupti_status(CUPTI_ERROR_UNKNOWN, "x").code() == StatusCode::kInternal);

  // A value CUPTI has no name for still gives a message, not a crash.
  const Status odd = cupti_status(static_cast<CUptiResult>(123456), "cuptiY");
  CHECK(odd.code() == StatusCode::kInternal);
  CHECK(contains(odd.message(), "cuptiY"));
  CHECK(contains(odd.message(), "123456"));
}

TEST_CASE("CUTRIAGE_CUPTI_RETURN_IF_ERROR returns from Status and Result functions", "[collectors][cupti_check]") {
  int reached = 0;
  CHECK(status_function(CUPTI_SUCCESS, &reached).is_ok());
  CHECK(reached == 1);
  const Status failed = status_function(CUPTI_ERROR_INVALID_METRIC_NAME, &reached);
  CHECK(failed.code() == StatusCode::kInvalidArgument);
  CHECK(contains(failed.message(), "fake_call(result): CUPTI_ERROR_INVALID_METRIC_NAME"));
  CHECK(reached == 1);  // returned before the end

  const Result<int> good = result_function(CUPTI_SUCCESS);
  REQUIRE(good.is_ok());
  CHECK(good.value() == 42);
  const Result<int> bad = result_function(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kPermissionDenied);
}

TEST_CASE("CUTRIAGE_ASSIGN_OR_RETURN and CUTRIAGE_RETURN_IF_ERROR propagate", "[collectors][cupti_check]") {
  const Result<int> good = doubled(CUPTI_SUCCESS);
  REQUIRE(good.is_ok());
  CHECK(good.value() == 84);
  const Result<int> bad = doubled(CUPTI_ERROR_NOT_INITIALIZED);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().code() == StatusCode::kUnavailable);

  CHECK(propagated(CUPTI_SUCCESS).is_ok());
  CHECK(propagated(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED).code() == StatusCode::kAlreadySubscribed);
}

// Without a usable driver the target-side entry points must fail cleanly: CUPTI itself crashes in
// cuptiDeviceGetChipName when there is no driver (seen offline).
TEST_CASE("target-side entry points fail cleanly without a usable driver", "[collectors][driver]") {
  using cutriage::collectors::cupti_chip_name;
  using cutriage::collectors::make_cupti_range_profiler;

  CHECK(cupti_chip_name(-1).status().code() == StatusCode::kInvalidArgument);
  CHECK(make_cupti_range_profiler(nullptr).status().code() == StatusCode::kInvalidArgument);

  const Result<int> devices = cutriage::collectors::cuda_device_count();
  if (devices.is_ok()) {
    // An initialized driver with devices (not the case in a test process, which never calls
    // cuInit): the chip name must come back.
    const Result<std::string> chip = cupti_chip_name(0);
    REQUIRE(chip.is_ok());
    CHECK_FALSE(chip.value().empty());
    return;
  }
  INFO(devices.status().message());
  CHECK(devices.status().code() == StatusCode::kUnavailable);
  const Result<std::string> chip = cupti_chip_name(0);
  CHECK(chip.status().code() == StatusCode::kUnavailable);
  CHECK_FALSE(chip.status().message().empty());
  // Never reaches CUPTI with this pointer: the driver check comes first.
  int not_a_context = 0;
  CHECK(make_cupti_range_profiler(&not_a_context).status().code() == StatusCode::kUnavailable);
}

}  // namespace test_cupti_check
