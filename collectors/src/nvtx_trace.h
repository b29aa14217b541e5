// NVTX annotations of the application as collectors::NvtxEvent, from CUPTI's NVTX callback domain.
//
// NVTX reaches CUPTI only when the application's NVTX library loads CUPTI as its injection: on
// its first NVTX call, NVTX reads NVTX_INJECTION64_PATH, dlopens that library and calls its
// InitializeInjectionNvtx2; without it every NVTX call stays a no-op for the rest of the process.
// point_nvtx_at_cupti() sets the variable from inside the agent (see there for when that works).
//
// CUPTI types stay in nvtx_trace.cpp; the callback ids and data cross as plain integers and void*.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cutriage/collectors/platform.h"

namespace cutriage::collectors {

// Sets NVTX_INJECTION64_PATH to the file of the loaded libcupti unless it is set already (a
// user's or `cutriage run`'s value is kept; an empty value too). Best effort: returns whether the
// variable names CUPTI's library afterwards (false also when it names another tool).
bool point_nvtx_at_cupti();

// Translates CUPTI NVTX callbacks, and keeps the names that later calls refer to by handle:
// domains (nvtxDomainCreateA/W) and registered strings (nvtxDomainRegisterStringA/W).
// Thread-safe. Names are interned for the object's lifetime, so the views it hands out stay valid
// beyond the callback; at most kMaxNames are kept (later ones read as empty).
class NvtxTranslator {
 public:
  static constexpr size_t kMaxNames = 16384;

  // The CUPTI_CB_DOMAIN_NVTX callback ids to enable.
  static const std::vector<uint32_t>& callback_ids();

  // One NVTX callback (`data` is CUPTI's const CUpti_NvtxData*). Returns true and fills `event`
  // (timestamp and thread id included) for the calls that are events; bookkeeping calls (domain
  // creation, string registration) and anything unknown return false. String views in `event`
  // are valid until the next translate() on this thread.
  bool translate(uint32_t cbid, const void* data, NvtxEvent* event);

 private:
  enum class Table : uint8_t { kDomain, kString };
  void remember(Table table, const void* handle, std::string name);
  std::string_view lookup(Table table, const void* handle);

  std::mutex mutex_;  // guards everything below
  std::deque<std::string> names_;  // interned, never modified or erased: views into it stay valid
  std::unordered_map<const void*, const std::string*> domains_;
  std::unordered_map<const void*, const std::string*> strings_;
};

}  // namespace cutriage::collectors
