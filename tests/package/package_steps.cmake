# Helpers of the package tests (cmake -P scripts in this folder).

# Runs a command; fails the test with its output when it fails.
function(tune_step label)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  list(JOIN ARGN " " command)
  message("-- ${label}: ${command}\n${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${label} failed (exit ${rc})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Fails unless `target` (built in the Ninja tree `dir`) links no CAF library:
# neither on its link line nor among the shared libraries it loads.
function(tune_no_caf dir target)
  execute_process(COMMAND ninja -C ${dir} -t commands ${target} OUTPUT_VARIABLE commands RESULT_VARIABLE rc)
  string(REGEX REPLACE ".*\n([^\n]+)\n?$" "\\1" link "${commands}")
  execute_process(COMMAND ldd ${dir}/${target} OUTPUT_VARIABLE loaded)
  if(NOT rc EQUAL 0 OR link MATCHES "caf" OR loaded MATCHES "libcaf")
    message(FATAL_ERROR "${target} links the C++ Actor Framework; tune::engine must not need it:\n"
                        "link line: ${link}\nldd:\n${loaded}")
  endif()
  message("-- ${target} links no CAF library")
endfunction()
