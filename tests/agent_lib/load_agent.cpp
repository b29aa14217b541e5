// Stands in for an application: loads libcutriage.so the way the CUDA driver does for
// CUDA_INJECTION64_PATH (dlopen + InitializeInjection), then "runs" and exits normally so the
// agent's exit hook runs too. Prints "app: ok" on stdout; everything the agent says goes to stderr.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_agent LIBRARY\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  using InitFn = int (*)();
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "InitializeInjection"));
  if (init == nullptr) {
    std::fprintf(stderr, "no InitializeInjection\n");
    return 2;
  }
  int r = init();
  std::printf("app: ok (InitializeInjection returned %d)\n", r);
  return 0;
}
