// Where the tool writes what -o names, without ever destroying what was there when the write
// fails. A regular file (or a new name) is written as a temporary file in the same directory and
// renamed over the name only once every byte is written and closed: a failed write (disk full,
// EIO) removes the temporary file and leaves the name as it was. Anything else at the name (a
// device such as /dev/null or /dev/full, a FIFO) is written in place and never removed: the tool
// deletes only files it created. Before, a failed `trace -o /dev/full` deleted the device node.
#pragma once

#include <fstream>
#include <string>

namespace cutriage::tools {

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // not committed: removes the temporary file (never the name itself)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Opens where the bytes go. false with `error` set (the reason, without the path) when nothing
  // can be written there.
  bool open(const std::string& path, std::string* error);
  std::ostream& stream() { return out_; }
  // Flushes and closes, then renames the temporary file into place. false with `error` set when
  // any write failed; the temporary file is then removed and the name left as it was.
  bool commit(std::string* error);

 private:
  void discard();

  std::string path_;
  std::string temp_;  // empty when writing in place
  std::ofstream out_;
};

// Whether `a` and `b` name the same existing file (same device and inode, so "./x.pb", "x.pb"
// and a hard link all match). false when either does not exist.
bool same_file(const std::string& a, const std::string& b);

}  // namespace cutriage::tools
