# Every option carries the CUTRIAGE_ prefix so the project can be embedded without collisions.
option(CUTRIAGE_BUILD_TESTS "Build the test suite" ON)
option(CUTRIAGE_BUILD_TOOLS "Build the cutriage command-line tool (needs protobuf)" ON)
option(CUTRIAGE_BUILD_EXAMPLES "Build the example zoo when a CUDA compiler is found" ON)
option(CUTRIAGE_WERROR "Treat compiler warnings as errors (CI turns this on)" OFF)
option(CUTRIAGE_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (clang only; .ci/fuzz.sh)" OFF)
set(CUTRIAGE_SANITIZE "" CACHE STRING
    "Sanitizers for the project's own targets, ';'-separated: address, undefined, thread")
set(CUTRIAGE_CUDA "AUTO" CACHE STRING
    "Build the CUPTI targets (agent, collectors) and the zoo: AUTO (when the toolkit is found), ON, OFF")
set_property(CACHE CUTRIAGE_CUDA PROPERTY STRINGS AUTO ON OFF)
