# Builds examples/cmake-embed against the installed package with a tiny
# budget and runs it; then checks when build-time tuning runs trials (cmake -P):
# never on a rebuild with nothing changed, nor when only the header is lost
# (the database holds the result); again for a changed budget; never offline.
#   -DPREFIX=<install prefix> -DEXAMPLE_DIR=<examples/cmake-embed> -DWORK_DIR=<scratch> [-DCXX_LAUNCHER=ccache]
include(${CMAKE_CURRENT_LIST_DIR}/package_steps.cmake)

set(task matmul:64x64x64)
set(db ${WORK_DIR}/tune_engine/tune-engine.db)
file(REMOVE_RECURSE ${WORK_DIR})
set(options -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${PREFIX} -DEMBED_TASK=${task})
if(CXX_LAUNCHER)
  list(APPEND options -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()

# Runs and trials the database holds for the task.
function(recorded runs_var trials_var)
  tune_step(best ${PREFIX}/bin/tune-engine best --db ${db} --task ${task}:cpu --json)
  string(JSON runs GET "${step_output}" runs)
  string(JSON trials GET "${step_output}" trials)
  set(${runs_var} ${runs} PARENT_SCOPE)
  set(${trials_var} ${trials} PARENT_SCOPE)
endfunction()

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: ${actual}, expected ${expected}")
  endif()
endfunction()

# Fails unless the last step's output says (or, with NOT, does not say) `text`.
function(expect_said what)
  set(negate OFF)
  set(text "${ARGV1}")
  if(ARGV1 STREQUAL "NOT")
    set(negate ON)
    set(text "${ARGV2}")
  endif()
  string(FIND "${step_output}" "${text}" at)
  if((at EQUAL -1) AND NOT negate)
    message(FATAL_ERROR "${what}: the output does not say '${text}'")
  elseif((NOT at EQUAL -1) AND negate)
    message(FATAL_ERROR "${what}: the output says '${text}'")
  endif()
endfunction()

tune_step(configure ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR} ${options} -DEMBED_BUDGET=4)
tune_step("first build" ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)
expect_said("first build" "tuning ${task}")
recorded(runs trials)
expect("runs after the first build" ${runs} 1)
expect("trials after the first build" ${trials} 4)
tune_step(run ${WORK_DIR}/embed_matmul)

tune_step("second build" ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)
expect_said("second build" NOT "tune-engine: mm")
recorded(runs trials)
expect("trials after the second build" ${trials} 4)

file(REMOVE ${WORK_DIR}/tune_engine/mm.hpp)
tune_step("build without the header" ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)
expect_said("build without the header" "${task} already tuned")
recorded(runs trials)
expect("trials after rebuilding the header" ${trials} 4)

tune_step("budget 5" ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR} -DEMBED_BUDGET=5)
tune_step("build with budget 5" ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)
expect_said("build with budget 5" "tuning ${task}")
recorded(runs trials)
expect("runs after changing the budget" ${runs} 2)
tune_step(run ${WORK_DIR}/embed_matmul)

tune_step(offline ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${WORK_DIR} -DEMBED_BUDGET=6 -DTUNE_ENGINE_OFFLINE=ON)
tune_step("offline build" ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)
expect_said("offline build" NOT "tune-engine: mm")
recorded(runs trials)
expect("runs after an offline build" ${runs} 2)
tune_step(run ${WORK_DIR}/embed_matmul)
