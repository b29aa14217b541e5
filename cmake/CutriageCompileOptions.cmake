# Warnings and sanitizers are applied per target, to the project's own code only (never to
# generated protobuf sources or third-party headers, which are included as SYSTEM).
function(cutriage_target_defaults target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
        -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference
        -Wimplicit-fallthrough>)
    if(CUTRIAGE_WERROR)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
    endif()
  endif()
  set(_sanitizers ${CUTRIAGE_SANITIZE})
  if(CUTRIAGE_BUILD_FUZZERS)
    # Coverage instrumentation for libFuzzer in every project target; the fuzz targets themselves
    # add -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
    list(APPEND _sanitizers fuzzer-no-link)
  endif()
  if(_sanitizers)
    string(REPLACE ";" "," _san "${_sanitizers}")
    target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer
                                              -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${_san})
    # CUTRIAGE_ASAN_SHARED_RUNTIME: the injected library is linked with --no-undefined and loaded
    # into a host process, so it and every executable of the build share one ASan runtime, the
    # shared one, found through an absolute RUNPATH (an instrumented .so cannot take the runtime
    # from a static copy in the executable, and two copies refuse to start).
    if(CUTRIAGE_ASAN_SHARED_RUNTIME AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND "address" IN_LIST _sanitizers)
      if(NOT CUTRIAGE_ASAN_RUNTIME_DIR)
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                        OUTPUT_VARIABLE _asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
        get_filename_component(_asan_dir "${_asan_rt}" DIRECTORY)
        set(CUTRIAGE_ASAN_RUNTIME_DIR "${_asan_dir}" CACHE INTERNAL "directory of clang's shared ASan runtime")
      endif()
      target_link_options(${target} PRIVATE -shared-libasan -Wl,-rpath,${CUTRIAGE_ASAN_RUNTIME_DIR})
    endif()
  endif()
endfunction()
