// Several cutriage files read as the runs they hold. Files of one process (the segments of a
// rotated run: same host, pid, start time and source, CUTRIAGE_SEGMENT_SECONDS) are merged into
// one file, in segment order; files of different processes (the ranks of one job, a restarted
// service) are kept apart, each named after its host and pid. `cutriage report A.pb B.pb ...`
// and each side of `cutriage diff` read their files through this.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "file_reader.h"
#include "report.h"
#include "table_export.h"

namespace cutriage::tools {

struct ProcessRun {
  std::string name;                // "host:pid" (made unique among the processes read)
  std::vector<std::string> paths;  // its files, in segment order
  ReadResult file;                 // one file: the segments merged
  // Several segments: per path, its interned ids -> `file`'s (merge_segments numbers them again),
  // for what reads a segment again by itself (the trace export). Empty for one file: the same ids.
  std::vector<std::map<uint64_t, uint64_t>> segment_iids;
};

struct MultiRead {
  // The worst status of the files read: kOk, kTruncated (complete records used), or the first
  // unusable file's (then `processes` is empty).
  ReadStatus status = ReadStatus::kOk;
  std::vector<std::string> messages;  // "path: problem", one per file with one
  // Set when the files cannot be read together (the same segment of one run given twice):
  // a usage error.
  std::string conflict;
  std::vector<ProcessRun> processes;  // in the order their first file was given
};

// Reads `paths` and groups them into processes. With ReadScope::kCurrent and `fold`, a process that
// needs its trace events (needs_trace_events: no trace summary in any of its files) has them
// folded from a second read of its files, record by record (fold_trace_events); commands that show
// no application view (trace, pprof) leave `fold` off.
MultiRead read_runs(const std::vector<std::string>& paths, ReadScope scope = ReadScope::kEverything,
                    bool fold = true);

// The grouping alone, on files already read (`paths[i]` names `files[i]`).
MultiRead group_runs(const std::vector<std::string>& paths, std::vector<ReadResult> files);

// The segments of one process as one file: the first segment's session header, every string
// interned again in one numbering, then every other record of each segment in order. The interned
// ids of each segment are its own (a segment reads on its own), so every *_iid field is renumbered;
// `iid_maps` (optional) gets each segment's renumbering.
ReadResult merge_segments(const std::vector<const ReadResult*>& segments,
                          std::vector<std::map<uint64_t, uint64_t>>* iid_maps = nullptr);

// `report` over the processes: one process reads as `render_report` of it; several are each
// opened by a heading naming the process and its files.
std::string render_runs_report(const std::vector<ProcessRun>& runs, const ReportOptions& options);

// The table of the processes: one process is `render_table` of it; several add a first column
// `process` and list the processes' rows one after the other. `error` as render_table's (a
// process without a trace, for family rows).
std::string render_runs_table(const std::vector<ProcessRun>& runs, TableFormat format, TableRows rows,
                              std::string& error);

// `cutriage report A.pb B.pb ...`: the report (format unset: text) or the table of the files,
// to `out`; problems to `err`. main.cpp's exit codes: 0, 1 (the same segment twice), 2, 3, 4 (a
// truncated input, its complete records used), 10 (family rows of a process without a trace).
int report_runs(const std::vector<std::string>& paths, const ReportOptions& options,
                std::optional<TableFormat> format, std::optional<TableRows> rows, std::ostream& out,
                std::ostream& err);

}  // namespace cutriage::tools
