// `cutriage run`'s progress: while the application runs, the agent's output file is followed (read
// from where the last look left off, about every 100 ms) and each newly profiled launch gets one
// line on stderr, as ncu's "==PROF== Profiling ..." lines:
//
//   cutriage: profiled stencil_5pt (launch #12): MEMORY BOUND - DRAM at 91% of peak
//
// The file is a stream of length-delimited records that grows while it is read: a record cut off
// by the end of what is written so far (a torn last record) is read again on the next look, once
// complete. Kernel names are the application's: control characters in them are escaped (\xNN).
// Colour and cutting a line to the terminal's width are for terminals only, never for pipes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "cutriage/v1/cutriage.pb.h"

namespace cutriage::tools {

struct ProgressStyle {
  bool color = false;  // ANSI colours
  size_t width = 0;    // cut lines to this many columns; 0: never cut
};

// For the descriptor `fd`: colour and its width when it is a terminal (isatty), plain otherwise.
// NO_COLOR (https://no-color.org) in the environment turns the colour off.
ProgressStyle progress_style_for(int fd);

// The line for one profiled launch, without its newline.
std::string progress_line(std::string_view kernel_name, const v1::KernelProfile& kernel, const ProgressStyle& style);

class ProgressFollower {
 public:
  ProgressFollower(std::string path, std::ostream& out, ProgressStyle style);
  ~ProgressFollower();
  ProgressFollower(const ProgressFollower&) = delete;
  ProgressFollower& operator=(const ProgressFollower&) = delete;

  // Reads what was appended since the last call and prints a line for each launch profiled in it
  // (one per launch: the records the agent writes again later, with more data, print nothing).
  // A file that does not exist yet is not an error; one replaced or cut shorter is read afresh.
  // Returns the number of lines printed.
  size_t poll();

  // Lines printed so far.
  [[nodiscard]] size_t printed() const { return printed_; }

 private:
  void reset();
  size_t consume(const v1::Record& record);

  std::string path_;
  std::ostream& out_;
  ProgressStyle style_;
  int fd_ = -1;
  uint64_t inode_ = 0;
  uint64_t offset_ = 0;       // bytes of the file read so far
  std::string pending_;       // read bytes not yet parsed: the start of a record still being written
  bool broken_ = false;       // not a cutriage record stream: stop following
  std::unordered_map<uint64_t, std::string> names_;        // interned strings
  std::set<std::pair<uint64_t, uint64_t>> seen_;           // (launch_index, mangled_name_iid)
  size_t printed_ = 0;
};

}  // namespace cutriage::tools
