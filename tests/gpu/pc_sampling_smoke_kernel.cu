// Kernels of the PC-sampling smoke test (tests/gpu/pc_sampling_smoke.cpp). Never compiled into an
// executable: tests/CMakeLists.txt builds this file into two cubins (nvcc -cubin, with and without
// -lineinfo) that the test embeds, loads with cuModuleLoadData and hands to cubin_crc and
// sass_to_source, so that the bytes the driver loaded are the bytes CUPTI correlates.
//
// pcs_chase: each thread follows the chain next[i] = (i + stride) % n through a large array. Every
// load needs the index the previous one returned, and each lands megabytes away from the last
// (another DRAM page, most likely another TLB entry), so warps spend nearly all their time waiting
// for the load on the marked line (long scoreboard): the hottest sampled PC must map to that line.
// The test finds the line by the marker at its end in this file (embedded too): keep the marker
// on the load's line, and nowhere else.

extern "C" __global__ void pcs_init_chain(unsigned* next, unsigned n, unsigned stride) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    next[i] = static_cast<unsigned>((static_cast<unsigned long long>(i) + stride) % n);
  }
}

extern "C" __global__ void pcs_chase(const unsigned* next, unsigned* out, unsigned n, int steps) {
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned idx = static_cast<unsigned>((tid * 7919ull) % n);
  for (int s = 0; s < steps; ++s) {
    idx = next[idx];  // PCS_HOT_LINE
  }
  out[tid] = idx;
}
