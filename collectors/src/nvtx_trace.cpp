#include "nvtx_trace.h"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cupti_check.h"

namespace cutriage::collectors {
namespace {

// generated_nvtx_meta.h has no struct for nvtxDomainCreateW; the call takes one wide name.
struct DomainCreateWParams {
  const wchar_t* name;
};

// Longest wide message converted (characters); NVTX messages are labels, not documents.
constexpr size_t kMaxWideChars = 4096;

// The caller's OS thread id, cached per thread (gettid is a system call). A forked child's only
// thread inherits its parent's cached value: the atfork handler, which runs on that thread in
// the child, forgets it.
thread_local uint32_t t_thread_id = 0;

void forget_thread_id_in_child() { t_thread_id = 0; }

uint32_t os_thread_id() {
  if (t_thread_id == 0) {
    static std::once_flag atfork_once;
    std::call_once(atfork_once, [] { (void)pthread_atfork(nullptr, nullptr, &forget_thread_id_in_child); });
    t_thread_id = static_cast<uint32_t>(gettid());
  }
  return t_thread_id;
}

std::string_view c_string(const char* s) { return s != nullptr ? std::string_view(s) : std::string_view(); }

// wchar_t is UTF-32 on Linux; invalid code points become U+FFFD.
void append_utf8(std::string& out, const wchar_t* s) {
  if (s == nullptr) return;
  for (size_t i = 0; s[i] != L'\0' && i < kMaxWideChars; ++i) {
    const wchar_t w = s[i];
    uint32_t c = w < 0 ? 0xFFFDU : static_cast<uint32_t>(w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
}

// A wide message converted into this thread's scratch string: valid until the next conversion
// on this thread, which is after the callback that delivers it.
std::string_view wide_message(const wchar_t* s) {
  thread_local std::string scratch;
  scratch.clear();
  append_utf8(scratch, s);
  return scratch;
}

std::string utf8(const wchar_t* s) {
  std::string out;
  append_utf8(out, s);
  return out;
}

template <typename Params>
const Params* params_of(const CUpti_NvtxData& data) {
  return static_cast<const Params*>(data.functionParams);
}

// The return value of the call, when CUPTI passes it (nvtxRangeStart*: the range id;
// nvtxDomainCreate*: the handle; nvtxDomainRegisterString*: the string handle).
template <typename T>
bool return_value(const CUpti_NvtxData& data, T* out) {
  if (data.functionReturnValue == nullptr) return false;
  *out = *static_cast<const T*>(data.functionReturnValue);
  return true;
}

}  // namespace

bool point_nvtx_at_cupti() {
  // Why set it here: NVTX loads its tool on the application's first NVTX call, from this
  // variable, and only then. The agent is injected into an unmodified application, whose
  // environment rarely names CUPTI. Setting it from subscribe() (which runs inside cuInit, through
  // CUDA_INJECTION64_PATH or cutriage_start()) works when the application's first NVTX call comes
  // after cuInit; an application that annotates before initializing CUDA has already settled on
  // "no tool", and only a variable set before the process starts helps (`cutriage run` sets it).
  if (const char* current = std::getenv("NVTX_INJECTION64_PATH"); current != nullptr) {
    // The user's (or cutriage run's) choice stands, even when it names another tool.
    return std::strstr(current, "cupti") != nullptr;
  }
  // The libcupti this process already loaded: NVTX's dlopen of the same file returns it instead
  // of loading a second CUPTI.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) == 0 || info.dli_fname == nullptr ||
      std::strstr(info.dli_fname, "cupti") == nullptr) {
    return false;
  }
  // setenv races with a concurrent getenv on another thread. This runs once, inside cuInit or
  // cutriage_start(), before the application's threads use CUDA; glibc keeps the old environment
  // array alive, so a racing getenv reads the old or the new one, never freed memory.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): see above.
  return setenv("NVTX_INJECTION64_PATH", info.dli_fname, /*overwrite=*/0) == 0;
}

const std::vector<uint32_t>& NvtxTranslator::callback_ids() {
  static const std::vector<uint32_t> ids = {
      CUPTI_CBID_NVTX_nvtxMarkA,
      CUPTI_CBID_NVTX_nvtxMarkW,
      CUPTI_CBID_NVTX_nvtxMarkEx,
      CUPTI_CBID_NVTX_nvtxDomainMarkEx,
      CUPTI_CBID_NVTX_nvtxRangeStartA,
      CUPTI_CBID_NVTX_nvtxRangeStartW,
      CUPTI_CBID_NVTX_nvtxRangeStartEx,
      CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
      CUPTI_CBID_NVTX_nvtxRangeEnd,
      CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
      CUPTI_CBID_NVTX_nvtxRangePushA,
      CUPTI_CBID_NVTX_nvtxRangePushW,
      CUPTI_CBID_NVTX_nvtxRangePushEx,
      CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
      CUPTI_CBID_NVTX_nvtxRangePop,
      CUPTI_CBID_NVTX_nvtxDomainRangePop,
      CUPTI_CBID_NVTX_nvtxDomainCreateA,
      CUPTI_CBID_NVTX_nvtxDomainCreateW,
      CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
      CUPTI_CBID_NVTX_nvtxDomainRegisterStringW,
  };
  return ids;
}

void NvtxTranslator::remember(Table table, const void* handle, std::string name) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto& map = table == Table::kDomain ? domains_ : strings_;
  // NVTX returns the same handle when a name is created or registered again.
  if (auto it = map.find(handle); it != map.end() && *it->second == name) return;
  if (names_.size() >= kMaxNames) return;
  // A handle reused for another name points at a new string; views of the old one stay valid.
  names_.push_back(std::move(name));
  map[handle] = &names_.back();
}

std::string_view NvtxTranslator::lookup(Table table, const void* handle) {
  if (handle == nullptr) return {};  // the default domain
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto& map = table == Table::kDomain ? domains_ : strings_;
  auto it = map.find(handle);
  return it != map.end() ? std::string_view(*it->second) : std::string_view();
}

bool NvtxTranslator::translate(uint32_t cbid, const void* raw, NvtxEvent* event) {
  const auto* data = static_cast<const CUpti_NvtxData*>(raw);
  if (data == nullptr) return false;
  const CUpti_NvtxData& d = *data;
  // nvtxRangePop's parameter struct is a dummy: it is the only call read without parameters.
  if (d.functionParams == nullptr && cbid != CUPTI_CBID_NVTX_nvtxRangePop) return false;

  auto attributes = [this](const nvtxEventAttributes_t* a) -> std::string_view {
    // Older NVTX versions pass a smaller struct: read only what its size covers.
    if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return {};
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII: return c_string(a->message.ascii);
      case NVTX_MESSAGE_TYPE_UNICODE: return wide_message(a->message.unicode);
      case NVTX_MESSAGE_TYPE_REGISTERED: return lookup(Table::kString, a->message.registered);
      default: return {};
    }
  };
  auto domain = [this](nvtxDomainHandle_t h) { return lookup(Table::kDomain, h); };

  NvtxEvent ev;
  switch (cbid) {
    // Bookkeeping: names that later calls refer to by handle.
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      nvtxDomainHandle_t h = nullptr;
      const char* name = params_of<nvtxDomainCreateA_params>(d)->name;
      if (return_value(d, &h) && h != nullptr && name != nullptr) remember(Table::kDomain, h, name);
      return false;
    }
    case CUPTI_CBID_NVTX_nvtxDomainCreateW: {
      nvtxDomainHandle_t h = nullptr;
      const wchar_t* name = params_of<DomainCreateWParams>(d)->name;
      if (return_value(d, &h) && h != nullptr && name != nullptr) remember(Table::kDomain, h, utf8(name));
      return false;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      nvtxStringHandle_t h = nullptr;
      const char* s = params_of<nvtxDomainRegisterStringA_params>(d)->string;
      if (return_value(d, &h) && h != nullptr && s != nullptr) remember(Table::kString, h, s);
      return false;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW: {
      // The generated struct declares the string as char*; the call passes a wchar_t*.
      nvtxStringHandle_t h = nullptr;
      const auto* s = reinterpret_cast<const wchar_t*>(params_of<nvtxDomainRegisterStringW_params>(d)->string);
      if (return_value(d, &h) && h != nullptr && s != nullptr) remember(Table::kString, h, utf8(s));
      return false;
    }

    case CUPTI_CBID_NVTX_nvtxMarkA:
      ev.kind = NvtxEvent::Kind::kMark;
      ev.message = c_string(params_of<nvtxMarkA_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxMarkW:
      ev.kind = NvtxEvent::Kind::kMark;
      ev.message = wide_message(params_of<nvtxMarkW_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
      ev.kind = NvtxEvent::Kind::kMark;
      ev.message = attributes(params_of<nvtxMarkEx_params>(d)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
      const auto* p = params_of<nvtxDomainMarkEx_params>(d);
      ev.kind = NvtxEvent::Kind::kMark;
      ev.domain = domain(p->domain);
      ev.message = attributes(p->core.eventAttrib);
      break;
    }

    // Start/end ranges: the id NVTX returned from the start is what the end passes.
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
      ev.kind = NvtxEvent::Kind::kStart;
      ev.message = c_string(params_of<nvtxRangeStartA_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
      ev.kind = NvtxEvent::Kind::kStart;
      ev.message = wide_message(params_of<nvtxRangeStartW_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      ev.kind = NvtxEvent::Kind::kStart;
      ev.message = attributes(params_of<nvtxRangeStartEx_params>(d)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
      const auto* p = params_of<nvtxDomainRangeStartEx_params>(d);
      ev.kind = NvtxEvent::Kind::kStart;
      ev.domain = domain(p->domain);
      ev.message = attributes(p->core.eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
      ev.kind = NvtxEvent::Kind::kEnd;
      ev.range_id = params_of<nvtxRangeEnd_params>(d)->id;
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
      const auto* p = params_of<nvtxDomainRangeEnd_params>(d);
      ev.kind = NvtxEvent::Kind::kEnd;
      ev.domain = domain(p->domain);
      ev.range_id = p->core.id;
      break;
    }

    // Push/pop ranges nest per thread (and per domain).
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      ev.kind = NvtxEvent::Kind::kPush;
      ev.message = c_string(params_of<nvtxRangePushA_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      ev.kind = NvtxEvent::Kind::kPush;
      ev.message = wide_message(params_of<nvtxRangePushW_params>(d)->message);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      ev.kind = NvtxEvent::Kind::kPush;
      ev.message = attributes(params_of<nvtxRangePushEx_params>(d)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      const auto* p = params_of<nvtxDomainRangePushEx_params>(d);
      ev.kind = NvtxEvent::Kind::kPush;
      ev.domain = domain(p->domain);
      ev.message = attributes(p->core.eventAttrib);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePop:
      ev.kind = NvtxEvent::Kind::kPop;
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      ev.kind = NvtxEvent::Kind::kPop;
      ev.domain = domain(params_of<nvtxDomainRangePop_params>(d)->domain);
      break;

    default:
      return false;
  }
  if (ev.kind == NvtxEvent::Kind::kStart) {
    nvtxRangeId_t id = 0;
    if (return_value(d, &id)) ev.range_id = id;
  }
  uint64_t now = 0;
  if (CUTRIAGE_CUPTI_STATUS(cuptiGetTimestamp(&now)).is_ok()) ev.timestamp_ns = now;
  ev.thread_id = os_thread_id();
  *event = ev;
  return true;
}

}  // namespace cutriage::collectors
