# tune_engine_add_tuned_kernel() refuses bad arguments at configure time with
# a message saying what to write (cmake -P):
#   -DPREFIX=<install prefix> -DEXAMPLE_DIR=<examples/cmake-embed> -DWORK_DIR=<scratch>

# Configures the example with `options`; fails the test unless configuring
# fails with `expected` in its message.
function(expect_refused expected)
  file(REMOVE_RECURSE ${WORK_DIR})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR} -G Ninja -DCMAKE_PREFIX_PATH=${PREFIX}
                          ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  # CMake wraps long messages: compare with every run of white space as one space.
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out}")
  string(FIND "${flat}" "${expected}" at)
  if(rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "configuring with ${ARGN} should fail saying '${expected}' (exit ${rc}):\n${out}")
  endif()
  message("-- refused ${ARGN}: says '${expected}'")
endfunction()

expect_refused("TASK 'matmul:64x64' is not a built-in task; write matmul:NxKxM" -DEMBED_TASK=matmul:64x64)
expect_refused("TASK 'fft:64' is not a built-in task" -DEMBED_TASK=fft:64)
expect_refused("BUDGET '0' is not a positive number of trials" -DEMBED_BUDGET=0)
expect_refused("mm.hpp does not exist" -DTUNE_ENGINE_OFFLINE=ON)
