# Every option carries the CUTRIAGE_ prefix so the project can be embedded without collisions.
option(CUTRIAGE_BUILD_TESTS "Build the test suite (with the agent and the tool it tests)" ON)
option(CUTRIAGE_BUILD_AGENT
       "Build the agent: its core and the collectors, and libcutriage.so when the CUDA targets are on" ON)
option(CUTRIAGE_BUILD_TOOLS "Build the cutriage command-line tool (needs protobuf)" ON)
option(CUTRIAGE_BUILD_EXAMPLES "Build the example zoo when a CUDA compiler is found" ON)
option(CUTRIAGE_WERROR "Treat compiler warnings as errors (CI turns this on)" OFF)
option(CUTRIAGE_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (clang only; .ci/fuzz.sh)" OFF)
set(CUTRIAGE_SANITIZE "" CACHE STRING
    "Sanitizers for the project's own targets, ';'-separated: address, undefined, thread")
option(CUTRIAGE_ASAN_SHARED_RUNTIME
       "With CUTRIAGE_SANITIZE=address (clang): link clang's shared ASan runtime, so that the injected library can be instrumented too" OFF)
set(CUTRIAGE_UNITY_TESTS 8 CACHE STRING
    "Compile the Catch2 test executables in unity batches of this many files (0 or 1: one file at a time)")
set(CUTRIAGE_CUDA "AUTO" CACHE STRING
    "Build the CUPTI targets (agent, collectors) and the zoo: AUTO (when the toolkit is found), ON, OFF")
set_property(CACHE CUTRIAGE_CUDA PROPERTY STRINGS AUTO ON OFF)

# The test suite covers the agent and the tool together (the agent's tests read its records back
# with the tool's reader; the collectors' tests drive the agent core): CUTRIAGE_BUILD_TESTS=ON
# builds both, whatever CUTRIAGE_BUILD_AGENT and CUTRIAGE_BUILD_TOOLS say. The normal variable set
# here shadows the cached option for the whole project.
if(CUTRIAGE_BUILD_TESTS)
  foreach(_cutriage_part AGENT TOOLS)
    if(NOT CUTRIAGE_BUILD_${_cutriage_part})
      message(STATUS "cutriage: CUTRIAGE_BUILD_${_cutriage_part}=OFF overridden: the tests need it "
                     "(configure with -DCUTRIAGE_BUILD_TESTS=OFF to leave it out)")
      set(CUTRIAGE_BUILD_${_cutriage_part} ON)
    endif()
  endforeach()
endif()
