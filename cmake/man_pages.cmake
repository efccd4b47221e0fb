# Writes DIR/bpfscope.8.gz and DIR/TOOL.8.gz for each TOOL of the list TOOLS
# with `BPFSCOPE --man [TOOL]` (src/tools/man.cpp), compressed by GZIP -9n
# (no name or time stamp: the same build gives the same bytes).
file(MAKE_DIRECTORY "${DIR}")
foreach(name bpfscope ${TOOLS})
  if(name STREQUAL "bpfscope")
    set(args --man)
  else()
    set(args --man ${name})
  endif()
  execute_process(COMMAND "${BPFSCOPE}" ${args} OUTPUT_FILE "${DIR}/${name}.8" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "bpfscope ${args} failed (${rc})")
  endif()
  execute_process(COMMAND "${GZIP}" -9nf "${DIR}/${name}.8" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${DIR}/${name}.8 failed (${rc})")
  endif()
endforeach()
