// Writes the synthetic trace file of tests/support/trace_fixture.h (made-up inputs, encoded by the
// agent's RecordEncoder) for the `cutriage trace` test.
// usage: make_trace_file OUT.pb [--no-summary]
#include <cstdio>
#include <cstring>
#include <fstream>

#include "trace_fixture.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--no-summary") != 0)) {
    std::fprintf(stderr, "usage: make_trace_file OUT.pb [--no-summary]\n");
    return 1;
  }
  const std::string bytes = cutriage::testing::synthetic_trace_file(argc == 2);
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "make_trace_file: cannot write '%s'\n", argv[1]);
    return 1;
  }
  return 0;
}
