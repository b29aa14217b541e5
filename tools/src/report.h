// Human and JSON views of a cutriage file.
#pragma once

#include <string>

#include "file_reader.h"

namespace cutriage::tools {

struct ReportOptions {
  bool verbose = false;   // every check of every visited decision, not only the verdict
  size_t max_kernels = 0; // 0 = all
};

// Kernels sorted by profiled duration, longest first; per kernel: verdict, trust, the path through
// the decisions, the numbers behind the verdict, next action, estimated gain.
std::string render_report(const ReadResult& file, const ReportOptions& options);

// The proto3 JSON mapping of the file's records. Empty string and `error` set on failure.
std::string render_json(const ReadResult& file, std::string& error);

}  // namespace cutriage::tools
