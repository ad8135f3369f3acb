# The tune-engine CMake package: every library joins the export set
# tune-engine-targets (as tune::<EXPORT_NAME>) and installs its public
# headers; tune_install_package() writes tune-engineConfig.cmake, its version
# file and the modules the config loads (FindCAF, the tuned-kernel function).
#
#   <prefix>/lib/libtune_*.so                      the libraries
#   <prefix>/include/tune/...                      their public headers
#   <prefix>/bin/tune-engine                       the command (tune::tune-engine)
#   <prefix>/libexec/tune-engine/tune-kernel-worker   found by libtune_kernels relative to itself
#   <prefix>/lib/cmake/tune-engine/                config, version, targets, modules
#   <prefix>/share/tune-engine/topology-cpu.yaml   default topology of build-time tuning
#
# Other folders (bindings/) add their targets with
# install(TARGETS … EXPORT tune-engine-targets) before tune_install_package().
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TUNE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tune-engine)

# Installs a library target with its include/ folder; installed libraries
# find each other in their own folder.
function(tune_install_library target)
  set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                                             INSTALL_RPATH "$ORIGIN")
  install(TARGETS ${target} EXPORT tune-engine-targets)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# The tuned-kernel function serves projects that add this one with
# add_subdirectory() as well as those that find the installed package.
set_property(GLOBAL PROPERTY TUNE_ENGINE_DEFAULT_TOPOLOGY ${PROJECT_SOURCE_DIR}/examples/topology-cpu.yaml)
include(TuneEngineTunedKernel)

function(tune_install_package)
  # The bindings' installed library and module find the shared libraries too.
  if(TARGET tune_c)
    set_target_properties(tune_c PROPERTIES INSTALL_RPATH "$ORIGIN")
  endif()
  if(TARGET tune_engine_python)
    file(RELATIVE_PATH module_to_libraries /${TUNE_PYTHON_INSTALL_DIR} /${CMAKE_INSTALL_LIBDIR})
    set_target_properties(tune_engine_python PROPERTIES INSTALL_RPATH "$ORIGIN/${module_to_libraries}")
  endif()
  set(TUNE_ENGINE_SHARED ${BUILD_SHARED_LIBS})
  set(TUNE_ENGINE_ONLY ${TUNE_ENGINE_ONLY})
  set(TUNE_INSTALL_TOPOLOGY ${CMAKE_INSTALL_DATADIR}/tune-engine/topology-cpu.yaml)
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tune-engineConfig.cmake.in
    ${PROJECT_BINARY_DIR}/tune-engineConfig.cmake
    INSTALL_DESTINATION ${TUNE_INSTALL_CMAKEDIR}
    PATH_VARS TUNE_INSTALL_TOPOLOGY)
  # 0.x: a minor version may break the API.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/tune-engineConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(EXPORT tune-engine-targets NAMESPACE tune:: DESTINATION ${TUNE_INSTALL_CMAKEDIR})
  install(FILES
    ${PROJECT_BINARY_DIR}/tune-engineConfig.cmake
    ${PROJECT_BINARY_DIR}/tune-engineConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
    ${PROJECT_SOURCE_DIR}/cmake/TuneEngineTunedKernel.cmake
    ${PROJECT_SOURCE_DIR}/cmake/tune_engine_tune_kernel.cmake
    DESTINATION ${TUNE_INSTALL_CMAKEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/examples/topology-cpu.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/tune-engine)
endfunction()
