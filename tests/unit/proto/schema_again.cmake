# proto.schema_gen_reproducible: runs protoc and cutriage_schema_gen again on the .proto, into a
# directory of its own, and compares the headers with the ones the build generated. They differ
# when the generator's output depends on anything but the schema, or when the build's copy is stale.
foreach(var PROTOC GEN PROTO_DIR BUILT WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "schema_again.cmake: -D${var}=... missing")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/cutriage/wire)
execute_process(
  COMMAND ${PROTOC} --descriptor_set_out=${WORK}/cutriage.desc --include_imports -I ${PROTO_DIR}
          ${PROTO_DIR}/cutriage/v1/cutriage.proto
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "protoc failed (${rc})")
endif()
execute_process(
  COMMAND ${GEN} ${WORK}/cutriage.desc cutriage/v1/cutriage.proto ${WORK}/cutriage/wire/schema.h
          ${WORK}/cutriage/wire/schema_table.h
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cutriage_schema_gen failed (${rc})")
endif()
foreach(header schema.h schema_table.h)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${WORK}/cutriage/wire/${header}
                          ${BUILT}/cutriage/wire/${header}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${header}: generated again, it differs from ${BUILT}/cutriage/wire/${header}")
  endif()
endforeach()
message(STATUS "schema.h and schema_table.h: the same bytes again")
