# Configures, builds (-j2) and runs tests/consumer (cmake -P).
#   -DMODE=package -DPREFIX=<install prefix>      find_package(tune-engine)
#   -DMODE=subdirectory -DTUNE_SOURCE_DIR=<src>   add_subdirectory, tune::engine alone,
#                                                 with CAF made unfindable
#   -DCONSUMER_DIR=<tests/consumer> -DWORK_DIR=<scratch> [-DCXX_LAUNCHER=ccache]
include(${CMAKE_CURRENT_LIST_DIR}/package_steps.cmake)

file(REMOVE_RECURSE ${WORK_DIR})
set(options -G Ninja -DCMAKE_BUILD_TYPE=Release)
if(CXX_LAUNCHER)
  list(APPEND options -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
if(MODE STREQUAL "package")
  list(APPEND options -DCMAKE_PREFIX_PATH=${PREFIX})
elseif(MODE STREQUAL "subdirectory")
  # Proves the search builds without the C++ Actor Framework.
  list(APPEND options -DTUNE_ENGINE_SOURCE_DIR=${TUNE_SOURCE_DIR} -DCMAKE_DISABLE_FIND_PACKAGE_CAF=ON)
else()
  message(FATAL_ERROR "consumer.cmake: MODE is package or subdirectory, not '${MODE}'")
endif()
tune_step(configure ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR} ${options})
tune_step(build ${CMAKE_COMMAND} --build ${WORK_DIR} -j2)

tune_step(run ${WORK_DIR}/engine_consumer)
tune_no_caf(${WORK_DIR} engine_consumer)
if(MODE STREQUAL "package")
  tune_step(run ${WORK_DIR}/kernels_consumer ${PREFIX})
  tune_step(run ${WORK_DIR}/session_consumer)
endif()
