#include "record_json.h"

#include <google/protobuf/util/json_util.h>

namespace cutriage::tools {

namespace v1 = cutriage::v1;

namespace {

// libprotobuf's whitespace printer indents one space a level; a record sits two levels deep in
// {"records": [...]}. Every line of its own text is moved in by two spaces (a JSON string never
// holds a raw newline, so lines are the printer's own).
void append_indented(std::string& out, const std::string& json) {
  size_t line = 0;
  while (line < json.size()) {
    size_t end = json.find('\n', line);
    if (end == std::string::npos) end = json.size();
    out += "  ";
    out.append(json, line, end - line);
    line = end + 1;
    if (line < json.size()) out += '\n';
  }
}

// Prints the records `stream` hands over (stream_cutriage_file or _bytes).
template <typename Stream>
RecordJsonResult write_json(const Stream& stream, std::ostream& out) {
  RecordJsonResult result;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;   // one record's text, its buffer reused
  std::string block;  // what goes out next
  bool first = true;
  bool stopped = false;  // a record could not be printed: nothing after it is written
  result.read = stream([&](v1::Record& record) {
    if (stopped || !out) return;  // a failed stdout is said once, by main
    json.clear();
    const auto status = google::protobuf::util::MessageToJsonString(record, &json, options);
    if (!status.ok()) {
      result.print_error = std::string(status.message());
      stopped = true;
      return;
    }
    block.clear();
    block += first ? "{\n \"records\": [\n" : ",\n";
    first = false;
    append_indented(block, json);
    out.write(block.data(), static_cast<std::streamsize>(block.size()));
  });
  // The array closed only when every record read was printed: a whole read printed nothing on
  // such a fault, and a half-closed document would pass for a complete one.
  const bool complete = !stopped && (result.read.status == ReadStatus::kOk || result.read.status == ReadStatus::kTruncated);
  if (complete && !first) out << "\n ]\n}\n\n";
  return result;
}

}  // namespace

RecordJsonResult write_records_json(const std::string& path, std::ostream& out) {
  return write_json([&path](const RecordSink& each) { return stream_cutriage_file(path, each); }, out);
}

RecordJsonResult write_records_json_bytes(std::string_view bytes, std::ostream& out) {
  return write_json([bytes](const RecordSink& each) { return stream_cutriage_bytes(bytes, each); }, out);
}

}  // namespace cutriage::tools
