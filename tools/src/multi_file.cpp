#include "multi_file.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "job_view.h"
#include "trace_export.h"

namespace cutriage::tools {

namespace v1 = cutriage::v1;
namespace pb = google::protobuf;

namespace {

// What makes files one process: the agent writes the same header identity into every segment
// (agent/src/agent.cpp session_header); only segment_index differs.
using ProcessKey = std::tuple<std::string, uint64_t, uint64_t, int>;  // host, pid, start, source

ProcessKey key_of(const ReadResult& r) {
  const v1::SessionHeader& s = r.file.records(0).session();
  return {s.host(), s.pid(), s.start_time_unix_ns(), static_cast<int>(s.source())};
}

bool is_iid_field(const pb::FieldDescriptor& f) {
  if (f.cpp_type() != pb::FieldDescriptor::CPPTYPE_UINT64) return false;
  const std::string& n = f.name();
  auto ends = [&](std::string_view suffix) {
    return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends("_iid") || ends("_iids");
}

// Renumbers every interned-string reference in `m` through `map` (0 stays 0: "none"). Walks the
// schema by reflection, so a field added to cutriage.v1 with the *_iid naming is covered too.
void remap_iids(pb::Message& m, const std::map<uint64_t, uint64_t>& map) {
  const pb::Reflection* refl = m.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  auto to = [&](uint64_t id) {
    auto it = map.find(id);
    return it == map.end() ? uint64_t{0} : it->second;  // an id never defined stays undefined
  };
  for (const pb::FieldDescriptor* f : fields) {
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < refl->FieldSize(m, f); ++i) remap_iids(*refl->MutableRepeatedMessage(&m, f, i), map);
      } else {
        remap_iids(*refl->MutableMessage(&m, f), map);
      }
    } else if (is_iid_field(*f)) {
      if (f->is_repeated()) {
        for (int i = 0; i < refl->FieldSize(m, f); ++i) {
          refl->SetRepeatedUInt64(&m, f, i, to(refl->GetRepeatedUInt64(m, f, i)));
        }
      } else {
        refl->SetUInt64(&m, f, to(refl->GetUInt64(m, f)));
      }
    }
  }
}

std::string process_name(const ReadResult& r) {
  const v1::SessionHeader& s = r.file.records(0).session();
  std::string name = s.host().empty() ? std::string("?") : s.host();
  return name + ":" + std::to_string(s.pid());
}

}  // namespace

ReadResult merge_segments(const std::vector<const ReadResult*>& segments,
                          std::vector<std::map<uint64_t, uint64_t>>* iid_maps) {
  if (segments.size() == 1) return *segments.front();
  v1::File merged;
  std::map<std::string, uint64_t> ids;  // value -> new id
  std::vector<std::map<uint64_t, uint64_t>> maps(segments.size());
  for (size_t s = 0; s < segments.size(); ++s) {
    for (const auto& [id, value] : segments[s]->interned) {
      auto [it, added] = ids.try_emplace(value, ids.size() + 1);
      maps[s][id] = it->second;
    }
  }
  *merged.add_records()->mutable_session() = segments.front()->file.records(0).session();
  std::vector<std::pair<uint64_t, const std::string*>> by_id;
  by_id.reserve(ids.size());
  for (const auto& [value, id] : ids) by_id.emplace_back(id, &value);
  std::sort(by_id.begin(), by_id.end());
  for (const auto& [id, value] : by_id) {
    v1::InternedString* is = merged.add_records()->mutable_interned();
    is->set_id(id);
    is->set_value(*value);
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    for (const v1::Record& rec : segments[s]->file.records()) {
      if (rec.has_session() || rec.has_interned()) continue;
      v1::Record* copy = merged.add_records();
      *copy = rec;
      remap_iids(*copy, maps[s]);
    }
  }
  std::string bytes;
  merged.SerializeToString(&bytes);  // File.records is the record stream's own framing
  ReadResult r = read_cutriage_bytes(bytes);
  for (const ReadResult* seg : segments) {
    if (seg->status == ReadStatus::kTruncated) {
      r.status = ReadStatus::kTruncated;
      r.message = seg->message;
    }
    // A segment read without its trace events (ReadScope::kCurrent) has no chunk records to copy:
    // what it read of them is carried over instead.
    if (seg->trace_events_dropped) {
      r.trace_events_dropped = true;
      r.trace_chunks += seg->trace_chunks;
      r.pauses.insert(r.pauses.end(), seg->pauses.begin(), seg->pauses.end());
    }
  }
  std::sort(r.pauses.begin(), r.pauses.end());
  if (iid_maps != nullptr) *iid_maps = std::move(maps);
  return r;
}

MultiRead group_runs(const std::vector<std::string>& paths, std::vector<ReadResult> files) {
  MultiRead out;
  std::vector<ProcessKey> order;
  std::map<ProcessKey, std::vector<size_t>> groups;
  for (size_t i = 0; i < files.size(); ++i) {
    const ReadResult& r = files[i];
    if (r.status != ReadStatus::kOk) out.messages.push_back(paths[i] + ": " + r.message);
    if (r.status == ReadStatus::kNotCutriage || r.status == ReadStatus::kUnreadable) {
      out.status = r.status;
      out.processes.clear();
      return out;
    }
    if (r.status == ReadStatus::kTruncated) out.status = ReadStatus::kTruncated;
    const ProcessKey key = key_of(r);
    auto [it, added] = groups.try_emplace(key);
    if (added) order.push_back(key);
    it->second.push_back(i);
  }
  std::map<std::string, int> names_used;
  for (const ProcessKey& key : order) {
    std::vector<size_t>& members = groups[key];
    std::stable_sort(members.begin(), members.end(),
                     [&](size_t a, size_t b) { return files[a].segment_index < files[b].segment_index; });
    // The same segment twice (or a whole run with one of its segments) would count its launches
    // twice: refuse rather than guess.
    std::set<uint32_t> seen;
    std::optional<size_t> bad;
    for (size_t m : members) {
      if (!seen.insert(files[m].segment_index).second) {
        bad = m;
        break;
      }
    }
    if (!bad && members.size() > 1 && seen.count(0) != 0) bad = members.front();  // sorted: segment 0 first
    if (bad) {
      const uint32_t seg = files[*bad].segment_index;
      out.conflict = "'" + paths[*bad] + "' is " +
                     (seg == 0 ? std::string("a whole run") : "segment " + std::to_string(seg)) +
                     " of a process another file of the list also holds; give each segment once";
      out.processes.clear();
      return out;
    }
    ProcessRun run;
    std::vector<const ReadResult*> segs;
    for (size_t m : members) {
      run.paths.push_back(paths[m]);
      segs.push_back(&files[m]);
    }
    // One file is the process: moved, not copied (merge_segments copies, to keep its inputs).
    run.file = members.size() == 1 ? std::move(files[members.front()]) : merge_segments(segs, &run.segment_iids);
    run.name = process_name(run.file);
    if (const int n = ++names_used[run.name]; n > 1) run.name += "#" + std::to_string(n);
    out.processes.push_back(std::move(run));
  }
  return out;
}

MultiRead read_runs(const std::vector<std::string>& paths, ReadScope scope, bool fold) {
  std::vector<ReadResult> files;
  files.reserve(paths.size());
  for (const std::string& p : paths) files.push_back(read_cutriage_file(p, scope));
  MultiRead read = group_runs(paths, std::move(files));
  // A process without a trace summary has its summary recomputed from its trace events: its files
  // are read again record by record and the events folded into the statistics (trace_fold.h),
  // never held. Decided per process, not per file: a rotated run's earlier segments have no
  // summary of their own, its last one has the run's.
  for (ProcessRun& run : read.processes) {
    if (fold && needs_trace_events(run.file)) fold_trace_events(run.file, run.paths);
  }
  return read;
}

namespace {

// The processes in the order their sections and rows are given: by rank for the ranks of a job
// (a shell glob puts rank10 before rank2), else in the order their first file was given.
std::vector<size_t> section_order(const std::vector<ProcessRun>& runs, const std::optional<JobView>& job) {
  std::vector<size_t> order;
  if (job) {
    for (const RankStats& r : job->ranks) order.push_back(r.process);
  } else {
    for (size_t i = 0; i < runs.size(); ++i) order.push_back(i);
  }
  return order;
}

uint32_t rank_of(const ProcessRun& run) { return run.file.file.records(0).session().job().rank(); }

}  // namespace

std::string render_runs_report(const std::vector<ProcessRun>& runs, const ReportOptions& options) {
  if (runs.size() == 1) return render_report(runs.front().file, options);
  std::string out = std::to_string(runs.size()) + " processes\n";
  const std::optional<JobView> job = job_view(runs);
  if (job) out += "\n" + render_job_view(*job);
  for (const size_t i : section_order(runs, job)) {
    const ProcessRun& run = runs[i];
    out += "\n=== process " + terminal_safe(run.name, false) + " (";
    for (size_t k = 0; k < run.paths.size(); ++k) out += (k != 0 ? ", " : "") + terminal_safe(run.paths[k], false);
    out += ")";
    if (job) out += ", rank " + std::to_string(rank_of(run));
    out += " ===\n";
    out += render_report(run.file, options);
  }
  return out;
}

std::string render_runs_table(const std::vector<ProcessRun>& runs, TableFormat format, TableRows rows,
                              std::string& error) {
  const std::optional<JobView> job = job_view(runs);
  if (rows == TableRows::kRanks) {
    if (!job) {
      error = "--rows ranks: the files are not the ranks of one job (each needs a rank in its session header, "
              "one world size, no rank twice: docs/multi-gpu.md)";
      return {};
    }
    return render_rank_table(*job, format);
  }
  if (runs.size() == 1) return render_table(runs.front().file, format, rows, error);
  std::string out;
  if (format == TableFormat::kCsv) {
    out += job ? "process,rank" : "process";
    for (const std::string& c : table_columns(rows)) out += "," + c;
    out += "\r\n";
  }
  for (const size_t i : section_order(runs, job)) {
    const ProcessRun& run = runs[i];
    std::string one_error;
    const std::string table = render_table(run.file, format, rows, one_error);
    if (!one_error.empty()) {
      error = "process " + run.name + ": " + one_error;
      return {};
    }
    // The rows of render_table, each given the process (and the rank of a job's) first. A CSV row
    // ends in CRLF and a cell never holds a raw CR or LF (csv_cell escapes control characters), so
    // CRLF splits rows; a JSON line ends in LF, and JSON strings escape LF.
    const std::string rank = job ? std::to_string(rank_of(run)) : std::string();
    const std::string_view eol = format == TableFormat::kCsv ? "\r\n" : "\n";
    size_t pos = 0;
    bool header = format == TableFormat::kCsv;
    while (pos < table.size()) {
      size_t end = table.find(eol, pos);
      if (end == std::string::npos) end = table.size();
      const std::string_view row(table.data() + pos, end - pos);
      pos = end + eol.size();
      if (header) {
        header = false;
        continue;
      }
      if (format == TableFormat::kCsv) {
        out += csv_field(run.name) + "," + (job ? rank + "," : "") + std::string(row) + "\r\n";
      } else {
        // {"launch_index":... -> {"process":"host:pid","rank":0,"launch_index":...
        out += "{\"process\":" + json_string(run.name) + (job ? ",\"rank\":" + rank : "") +
               (row.size() > 2 ? "," : "") + std::string(row.substr(1)) + "\n";
      }
    }
  }
  return out;
}

int report_runs(const std::vector<std::string>& paths, const ReportOptions& options,
                std::optional<TableFormat> format, std::optional<TableRows> rows, std::ostream& out,
                std::ostream& err) {
  // main.cpp's exit codes.
  auto exit_for = [](ReadStatus status) {
    switch (status) {
      case ReadStatus::kOk: return 0;
      case ReadStatus::kTruncated: return 4;
      case ReadStatus::kNotCutriage: return 3;
      case ReadStatus::kUnreadable: return 2;
    }
    return 2;
  };
  MultiRead read = read_runs(paths, ReadScope::kCurrent);
  for (const std::string& m : read.messages) err << "cutriage: " << m << "\n";
  if (!read.conflict.empty()) {
    err << "cutriage: " << read.conflict << "\n";
    return 1;
  }
  if (read.processes.empty()) return exit_for(read.status);
  if (format) {
    std::string error;
    const std::string table = render_runs_table(read.processes, *format, rows.value_or(TableRows::kKernels), error);
    if (!error.empty()) {
      err << "cutriage: " << error << "\n";
      // Files that are not one job's ranks cannot be read as one, like a segment given twice.
      return rows == TableRows::kRanks ? 1 : 10;
    }
    out << table;
    return exit_for(read.status);
  }
  out << render_runs_report(read.processes, options);
  return exit_for(read.status);
}

}  // namespace cutriage::tools
