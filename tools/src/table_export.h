// `cutriage report --format json|csv`: the report as a table, one row per profiled kernel or per
// kernel family, for notebooks, spreadsheets and BigQuery (docs/exports.md lists the columns).
//
// Kernel rows: one per kernel as the text report counts them (report_model.h report_kernels: the
// highest revision of each launch, and of launches adaptive collection combined only the record
// that combines them), names resolved. Family rows: one per FamilyStats of the trace summary (or of
// the summary recomputed from the trace of a killed run), largest GPU time first, with its
// verdict or why it was not profiled.
// JSON Lines: one object per row, the columns as keys in the documented order, numbers as JSON
// numbers (never strings; a value that is not finite is null), strings escaped per RFC 8259 with
// control characters as \u00XX and bytes that are not UTF-8 replaced by U+FFFD.
// CSV (RFC 4180): a header row, then the rows, CRLF line ends; a field holding a comma, a double
// quote, CR or LF is quoted with its quotes doubled; control characters are escaped ("\x1b")
// first, so a cell never holds a raw control character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "file_reader.h"

namespace cutriage::tools {

enum class TableFormat : uint8_t { kJsonLines, kCsv };
// kRanks: one row per rank of a distributed job (job_view.h), only over the files of one.
enum class TableRows : uint8_t { kKernels, kFamilies, kRanks };

// The column names of `rows`, in output order (stable: scripts rely on them).
const std::vector<std::string>& table_columns(TableRows rows);

// The table of `file`. Family rows need a trace: `error` is set (and "" returned) when the file
// has none.
std::string render_table(const ReadResult& file, TableFormat format, TableRows rows, std::string& error);

// A cell: text, an integer, a real (NaN/inf written as null / empty) or nothing (null / empty).
using TableCell = std::variant<std::monostate, std::string, uint64_t, double>;
// One row of `columns` in `format`, as every table here writes its rows (the header is the
// caller's: a CSV table opens with the column names joined by commas and CRLF).
void append_table_row(std::string& out, TableFormat format, const std::vector<std::string>& columns,
                      const std::vector<TableCell>& cells);

// One string as a CSV field of this file (control characters escaped, quoted when needed), for
// the tables that add columns to these (multi_file.h). JSON strings: trace_export.h's json_string.
std::string csv_field(std::string_view text);

}  // namespace cutriage::tools
