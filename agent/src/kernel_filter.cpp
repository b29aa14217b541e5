// KernelFilter (config.h): exact names and ECMAScript regexes over a kernel's function,
// demangled or mangled name, for CUTRIAGE_KERNEL_NAME, the NVTX filters and deep-capture targets.
#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "config.h"
#include "config_text.h"
#include "cutriage/base/demangle.h"

namespace cutriage::agent {
namespace {

using config_text::kMaxShownValue;
using config_text::kRegexPrefix;

// True when a run of 10 or more digits follows '\\', '{' or ',': a back-reference or a repeat
// count. libstdc++'s regex compiler (GCC 12) reads such a number into a long without an overflow
// check (undefined behaviour past 19 digits, found by fuzz_kernel_filter) and then narrows it to
// int; no kernel-name filter needs a count that large.
bool has_oversized_regex_number(std::string_view re) {
  for (std::size_t i = 0; i + 1 < re.size(); ++i) {
    if (re[i] != '\\' && re[i] != '{' && re[i] != ',') continue;
    std::size_t digits = 0;
    while (i + 1 + digits < re.size() && re[i + 1 + digits] >= '0' && re[i + 1 + digits] <= '9') ++digits;
    if (digits >= 10) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// KernelFilter

struct KernelFilter::Impl {
  std::string spec;
  NameBase base = NameBase::kFunction;
  // Null for an exact-name spec. Shared between copies: a compiled std::regex is immutable, and
  // concurrent regex_search calls on one const regex are safe.
  std::shared_ptr<const std::regex> regex;
  bool whole_match = false;  // regex is the search pattern wrapped for regex_match (see set())
};

KernelFilter::KernelFilter() = default;
KernelFilter::~KernelFilter() = default;
KernelFilter::KernelFilter(const KernelFilter& other)
    : impl_(other.impl_ ? std::make_unique<Impl>(*other.impl_) : nullptr) {}
KernelFilter& KernelFilter::operator=(const KernelFilter& other) {
  if (this != &other) impl_ = other.impl_ ? std::make_unique<Impl>(*other.impl_) : nullptr;
  return *this;
}
KernelFilter::KernelFilter(KernelFilter&&) noexcept = default;
KernelFilter& KernelFilter::operator=(KernelFilter&&) noexcept = default;

std::string KernelFilter::set(std::string_view spec, NameBase base) {
  try {
    // Build the new state aside and swap it in at the end: on error nothing changes, and `spec`
    // may alias this filter's own spec() without harm.
    auto next = std::make_unique<Impl>();
    next->spec = std::string(spec);
    next->base = base;
    if (spec.substr(0, kRegexPrefix.size()) == kRegexPrefix) {
      const std::string_view body = spec.substr(kRegexPrefix.size());
      if (body.empty()) return "regex: needs a regular expression after the colon";
      if (body.size() > kMaxRegexLength) {
        return "regular expression longer than " + std::to_string(kMaxRegexLength) + " characters";
      }
      if (has_oversized_regex_number(body)) {
        return "bad regular expression (a repeat count or back-reference of 10 or more digits)";
      }
      auto flags = std::regex::ECMAScript | std::regex::nosubs;
#if defined(__GLIBCXX__)
      // Breadth-first execution: libstdc++'s default depth-first executor recurses once per input
      // character and overflows the stack on names of some ten thousand characters; this one's
      // depth is bounded by the automaton. It cannot run back-references and rejects them.
      flags |= std::regex_constants::__polynomial;
#endif
      try {
        // Compiled alone first: that is what validates the user's pattern (a wrapped "a)|(b"
        // would otherwise compile). From a std::string, not the string_view's range: libstdc++'s
        // scanner (GCC 12) peeks one character past the end of a pattern that ends in "(" (found
        // by fuzz_kernel_filter); a std::string's terminating NUL keeps that read in bounds.
        const std::string pattern(body);
        next->regex = std::make_shared<const std::regex>(pattern, flags);
#if defined(__GLIBCXX__)
        // regex_search restarts the automaton at every position, quadratic in the name's length
        // when there is no match (seconds for ".*gemm" on a 10k-character name). One anchored
        // pass over "[\s\S]*(?:RE)[\s\S]*" answers the same question in linear time: ECMAScript
        // has no lookbehind, and ^ (without multiline) still only holds at the name's start.
        const std::string wrapped = "[\\s\\S]*(?:" + std::string(body) + ")[\\s\\S]*";
        next->regex = std::make_shared<const std::regex>(wrapped, flags);
        next->whole_match = true;
#endif
      } catch (const std::regex_error& e) {
        std::string what = e.what();
        if (what.size() > kMaxShownValue) what = what.substr(0, kMaxShownValue) + "...";
        return "bad regular expression (" + what + ")";
      }
    }
    impl_ = std::move(next);
    return {};
  } catch (const std::exception& e) {
    return std::string("cannot set the kernel filter: ") + e.what();
  } catch (...) {
    return "cannot set the kernel filter";
  }
}

bool KernelFilter::empty() const { return !impl_ || impl_->spec.empty(); }

const std::string& KernelFilter::spec() const {
  static const std::string kEmpty;  // no allocation: constructing it cannot throw
  return impl_ ? impl_->spec : kEmpty;
}

NameBase KernelFilter::base() const { return impl_ ? impl_->base : NameBase::kFunction; }

bool KernelFilter::matches(std::string_view mangled, std::string_view demangled,
                           std::string_view function) const {
  if (empty()) return true;
  try {
    // Names the caller left empty are derived; `storage` keeps a derived name alive.
    std::string storage;
    std::string_view name;
    switch (impl_->base) {
      case NameBase::kMangled: name = mangled; break;
      case NameBase::kDemangled:
        name = demangled;
        if (name.empty() && !mangled.empty()) name = storage = tools::demangle(mangled);
        break;
      case NameBase::kFunction:
        name = function;
        if (name.empty()) {
          const std::string full = !demangled.empty() ? std::string(demangled) : tools::demangle(mangled);
          if (!full.empty()) name = storage = tools::function_base_name(full);
        }
        break;
    }
    if (!impl_->regex) return name == impl_->spec;
    if (impl_->whole_match) return std::regex_match(name.begin(), name.end(), *impl_->regex);
    return std::regex_search(name.begin(), name.end(), *impl_->regex);
  } catch (...) {
    return false;  // std::regex_error (complexity, stack) or allocation: treat as no match
  }
}

}  // namespace cutriage::agent
