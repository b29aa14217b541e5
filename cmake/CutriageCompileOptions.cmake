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
  endif()
endfunction()
