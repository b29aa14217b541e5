// Writes the SYNTHETIC PC-sampling file of tests/unit/tools/pc_sampling_fixture.h (made-up
// samples, encoded by the agent's RecordEncoder) for the `cutriage pprof` and report checks of
// tests/cli/test_pprof.sh.
// usage: make_pc_sampling_file OUT.pb
#include <cstdio>
#include <fstream>

#include "pc_sampling_fixture.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_pc_sampling_file OUT.pb\n");
    return 1;
  }
  const std::string bytes = cutriage::testing::synthetic_pc_file();
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "make_pc_sampling_file: cannot write '%s'\n", argv[1]);
    return 1;
  }
  return 0;
}
