# cmake -DBINARY=… -DSHELL_NAME=bash|zsh|fish -DOUTPUT=… -P write_completion.cmake
# Writes `gpuclean completion SHELL_NAME` to OUTPUT; a failing binary fails the build.
# OUTPUT's directory is made here: Ninja makes an output's directory, Unix Makefiles do not
# (`cmake -S . -B build && cmake --build build` failed with "No such file or directory").
get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
execute_process(COMMAND ${BINARY} completion ${SHELL_NAME} OUTPUT_FILE ${OUTPUT}.tmp
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(REMOVE ${OUTPUT}.tmp)
  message(FATAL_ERROR "${BINARY} completion ${SHELL_NAME} failed: ${status}")
endif()
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
