# The build step of tune_engine_add_tuned_kernel() (cmake -P): tunes NAME's
# task unless the results database already holds a run of this very request,
# then emits the header and the flags of the fastest configuration.
#
#   -DTUNE_ENGINE=… -DNAME=… -DTASK=… -DBACKEND=… -DBUDGET=… -DSTRATEGY=… -DSEED=…
#   -DTOPOLOGY=… -DDB=… [-DSERVER_STORE=ON] -DHEADER=… -DFLAGS=… -DREQUEST=<file naming all of these>
foreach(var TUNE_ENGINE NAME TASK BACKEND BUDGET SEED TOPOLOGY DB HEADER FLAGS REQUEST)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "tune_engine_tune_kernel.cmake: -D${var}=… is missing")
  endif()
endforeach()

set(emit ${TUNE_ENGINE} emit --db ${DB} --task ${TASK} --backend ${BACKEND} --name ${NAME} --header ${HEADER}
         --flags ${FLAGS})
file(READ ${REQUEST} request)
# The request a run recorded in DB answered (written after it finished):
# beside the file, or beside the header for a shared PostgreSQL store
# (SERVER_STORE, as tune_engine_add_tuned_kernel() told it).
if(SERVER_STORE)
  get_filename_component(header_dir ${HEADER} DIRECTORY)
  set(stamp ${header_dir}/${NAME}.tuned)
else()
  set(stamp ${DB}.${NAME}.tuned)
endif()
if(EXISTS ${stamp})
  file(READ ${stamp} answered)
  if(answered STREQUAL request)
    execute_process(COMMAND ${emit} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(rc EQUAL 0)
      message(STATUS "tune-engine: ${NAME}: ${TASK} already tuned in ${DB}; no trial")
      return()
    endif()
  endif()
endif()

if(NOT SERVER_STORE)
  get_filename_component(db_dir ${DB} DIRECTORY)
  file(MAKE_DIRECTORY ${db_dir})
endif()
set(tune ${TUNE_ENGINE} tune --topology ${TOPOLOGY} --task ${TASK} --budget ${BUDGET} --seed ${SEED} --db ${DB}
         --quiet)
if(STRATEGY)
  list(APPEND tune --strategy ${STRATEGY})
endif()
message(STATUS "tune-engine: ${NAME}: tuning ${TASK} on ${BACKEND}, ${BUDGET} trials")
execute_process(COMMAND ${tune} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  list(JOIN tune " " command)
  message(FATAL_ERROR "tune-engine: ${NAME}: '${command}' failed (exit ${rc}); see its message above")
endif()
file(WRITE ${stamp} "${request}")
execute_process(COMMAND ${emit} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  list(JOIN emit " " command)
  message(FATAL_ERROR "tune-engine: ${NAME}: '${command}' failed (exit ${rc}); see its message above")
endif()
