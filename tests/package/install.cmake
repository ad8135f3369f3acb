# Installs the build into a fresh prefix and checks what a consumer relies on
# (cmake -P): -DBUILD_DIR=<build> -DPREFIX=<prefix> -DSOURCE_DIR=<sources>
include(${CMAKE_CURRENT_LIST_DIR}/package_steps.cmake)

file(REMOVE_RECURSE ${PREFIX})
tune_step(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})

file(GLOB config ${PREFIX}/lib*/cmake/tune-engine/tune-engineConfig.cmake ${PREFIX}/lib/*/cmake/tune-engine/tune-engineConfig.cmake)
if(NOT config)
  message(FATAL_ERROR "no tune-engineConfig.cmake under ${PREFIX}/lib*/cmake/tune-engine")
endif()
get_filename_component(config_dir ${config} DIRECTORY)
foreach(file ${config_dir}/tune-engineConfigVersion.cmake ${config_dir}/FindCAF.cmake
             ${config_dir}/TuneEngineTunedKernel.cmake ${config_dir}/tune_engine_tune_kernel.cmake
             ${PREFIX}/bin/tune-engine ${PREFIX}/libexec/tune-engine/tune-kernel-worker
             ${PREFIX}/include/tune/engine/strategy.hpp ${PREFIX}/include/tune/kernels/tuned_kernel.hpp
             ${PREFIX}/share/tune-engine/topology-cpu.yaml)
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "the install lacks ${file}")
  endif()
endforeach()

# The installed command runs from the prefix (its libraries found by RPATH).
tune_step(command ${PREFIX}/bin/tune-engine --version)

# GEVO's workloads, data and edit worker are installed, and an installed
# evolve run uses them (the install is looked in before the build tree).
if(WITH_LLVM)
  foreach(file ${PREFIX}/share/tune-engine/gevo/fcnet.ll ${PREFIX}/share/tune-engine/gevo/cnn.ll ${PREFIX}/share/tune-engine/digits/digits.csv.gz
               ${PREFIX}/libexec/tune-engine/tune-ir-worker)
    if(NOT EXISTS ${file})
      message(FATAL_ERROR "the install lacks ${file}")
    endif()
  endforeach()
  file(REMOVE ${PREFIX}/evolve.db)
  tune_step(evolve ${CMAKE_COMMAND} -E env --unset=TUNE_GEVO_WORKLOAD_DIR --unset=TUNE_GEVO_DATA_DIR
            ${PREFIX}/bin/tune-engine evolve --workload 2fcnet:predict --budget 2 --seed 1 --db ${PREFIX}/evolve.db)
endif()

# An installed file that names the build or source tree breaks once they are gone.
file(GLOB_RECURSE text_files ${PREFIX}/*.cmake ${PREFIX}/*.hpp ${PREFIX}/*.h ${PREFIX}/*.yaml)
foreach(file ${text_files})
  file(READ ${file} text)
  foreach(tree ${BUILD_DIR} ${SOURCE_DIR})
    string(FIND "${text}" "${tree}/" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${file} names ${tree}: installed files must not point into the build or source tree")
    endif()
  endforeach()
endforeach()
list(LENGTH text_files count)
message("-- ${count} installed text files name neither ${BUILD_DIR} nor ${SOURCE_DIR}")
