// What the report views of a cutriage file compute alike: the kernels the report shows (one per
// kernel, adaptively merged launches folded into the record that combines them), the verdict and
// the evidence behind it, the gain, the family -> profiled launch link, and the numbers' spelling.
// `cutriage report` (text, report.cpp), its table export (table_export.cpp) and its HTML page
// (html_report.cpp) all read a file through these, so that they never disagree on what a kernel
// is, which evidence decided it or how a duration reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools::model {

// ---- numbers and words ---------------------------------------------------------------------

// A value for people: counts from five digits on grouped ("67,108,864"), others with three
// significant digits or one decimal ("94.7", "0.00123").
std::string fmt(double v, int precision = 3);
// "1.267 ms", "42.10 us", "512 ns".
std::string duration(double ns);
// Compact durations for tables, three significant digits, at most 9 characters: "1.23 s",
// "512 ms", "42.1 us". "-" for a value that is not a duration (unknown, no sample).
std::string short_duration(double ns);
// `part` of `whole` with one decimal ("9.4%"); "-" when `whole` is not positive.
std::string percent(double part, double whole);
std::string with_commas(uint64_t v);
// "3 kernels", "1 kernel": the count with commas and the word that fits it.
std::string plural(uint64_t n, const char* one, const char* many);
// "CLASSIFICATION_MEMORY_BOUND" -> "memory bound"
std::string enum_words(const std::string& name, std::string_view prefix);
// "D5 memory" for DECISION_D5_MEMORY_MECHANISM.
std::string decision_label(cutriage::v1::Decision d);
// "2x66x1"
std::string dim(const cutriage::v1::Dim3& d);
// "GPU 0 (NVIDIA H200)": the device and its name from the session header when it has one.
std::string gpu_label(const cutriage::v1::SessionHeader* session, uint32_t device);

// Columns of text are counted in code points, not bytes: names are UTF-8 (the encoder repairs
// them), and a cut inside a multi-byte sequence would leave invalid text on the terminal.
size_t text_width(std::string_view s);
// `s` cut to `width` columns, the cut marked with an ellipsis, then padded to `width`.
std::string fit(std::string_view s, size_t width);
// `s` right-aligned in `width` columns (never cut).
std::string right(const std::string& s, size_t width);

// `text` after `first`, broken at spaces into lines of at most `width` columns, each ending in a
// newline; continuation lines start with `rest`. A word longer than a line stays whole.
std::string wrap_text(const std::string& first, const std::string& rest, std::string_view text, size_t width);
// The text report's line width (report.cpp, report_collection.cpp).
inline constexpr size_t kReportWidth = 100;

// ---- kernels -------------------------------------------------------------------------------

// The kernels as the report counts them. Adaptive collection writes one record per profiled
// launch of a kernel; the latest one combines the earlier ones (combined_launch_indices) and is
// the one shown: of the current records (the highest revision of each launch, current_kernels),
// those no other current record combines. Profiled ones (PROFILED, or UNSPECIFIED in ncu imports)
// sorted by profiled duration, longest first; the others (skipped, failed, ...) in file order.
struct ReportKernels {
  std::vector<const cutriage::v1::KernelProfile*> current;  // in file order
  std::vector<const cutriage::v1::KernelProfile*> profiled;
  std::vector<const cutriage::v1::KernelProfile*> unprofiled;
};
ReportKernels report_kernels(const ReadResult& file);
ReportKernels report_kernels(const ReadResult&& file) = delete;  // holds pointers into it

bool is_profiled(const cutriage::v1::KernelProfile& k);

// The kernel's name for people: its function name, else its demangled name, else its mangled
// name, else "(unnamed kernel)". Raw bytes from the file: each view escapes them for its medium.
std::string kernel_name(const ReadResult& file, const cutriage::v1::KernelProfile& k);

// "helper" for "_Z6helperf": how a device function is named next to a PC (its demangled base
// name, else the mangled name).
std::string function_label(std::string_view mangled);

// How the counters were collected: "launch #63 + #48, the last in 4 replay passes", "38 replay
// passes" (an import), "launch #5, one pass each, no replay"; "" when the record does not say.
std::string collected_text(const cutriage::v1::KernelProfile& k);

// ---- the verdict ---------------------------------------------------------------------------

// "CLASSIFICATION_MEMORY_BOUND" + headline "memory_bound: DRAM" -> "MEMORY BOUND - DRAM".
std::string verdict_text(const cutriage::v1::Diagnosis& d);
// The check whose finding is the verdict (Diagnosis.primary_rule_id); null when none.
const cutriage::v1::Check* find_primary(const cutriage::v1::Diagnosis& d);
// The evidence the report shows for the verdict: the deciding number first, then the check's
// other numbers in the engine's order, the engine's bookkeeping (cutriage__routed*) left out,
// at most `limit`.
std::vector<const cutriage::v1::Evidence*> verdict_evidence(const cutriage::v1::Check& primary, size_t limit = 5);
// Decision 7's confirmation in words, with its own unit and threshold.
std::string hardware_limit_text(const cutriage::v1::Diagnosis& d);

// One step of the route through the decisions: "D5 memory", with its fired and not-evaluated
// checks.
struct PathStep {
  std::string label;
  int fired = 0;
  int not_evaluated = 0;
};
std::vector<PathStep> decision_path(const cutriage::v1::Diagnosis& d);

// What the fix could buy: on the kernel ("up to 8x on this kernel (basis)") and on the run
// (Amdahl over the kernel's share of the captured GPU time). Empty strings when unknown.
struct GainText {
  std::string kernel;
  std::string run;
};
GainText gain_text(const cutriage::v1::Diagnosis& d, const cutriage::v1::Check* primary);

// ---- the application view ------------------------------------------------------------------

// The profiled launch whose diagnosis stands for a family: among `current` (ReportKernels::
// current), the summary's profiled_launch_index, else the last profiled one, else the last one.
const cutriage::v1::KernelProfile* family_profile(const std::vector<const cutriage::v1::KernelProfile*>& current,
                                                  const cutriage::v1::FamilyStats& fs);
// Why a family has no verdict, from the agent's selection: "not profiled: ...".
std::string selection_text(const cutriage::v1::FamilyStats& fs);
// Why a family whose record `k` (family_profile; may be null) is not profiled has no verdict: the
// agent's selection, or without one recorded the record's own status ("not profiled: skipped (...)").
std::string not_profiled_text(const cutriage::v1::KernelProfile* k, const cutriage::v1::FamilyStats& fs);

}  // namespace cutriage::tools::model
