# tune_engine_add_tuned_kernel(): tune a built-in kernel at build time and
# compile the fastest configuration into a target.
#
#   tune_engine_add_tuned_kernel(
#     NAME mm                       C identifier: namespace of the header, mm::run(C, A, B)
#     TASK matmul:512x1024x1024     a built-in task, as `tune-engine tune --task` takes it
#     TARGET app                    the target the kernel is compiled into
#     [BACKEND cpu]                 only cpu kernels can be compiled in
#     [BUDGET 150]                  trials
#     [STRATEGY bo] [SEED 1]        as `tune-engine tune` takes them
#     [TOPOLOGY file.yaml]          default: one CPU device, two compile workers
#     [DB file]                     results database: a file (default <build>/tune_engine/tune-engine.db)
#                                   or a shared PostgreSQL store, postgresql://user@host/dbname
#     [OUTPUT_HEADER file])         default <build>/tune_engine/NAME.hpp
#
# At build time `tune-engine tune` runs once; `tune-engine emit` writes
# NAME.hpp (the configuration as constexpr values, the generated kernel
# source) and the flags its implementation is compiled with. The target gets
# NAME.cpp (defines TUNE_ENGINE_IMPLEMENT_NAME, includes NAME.hpp) and the
# header's folder on its include path. A rebuild with nothing changed runs no
# trial; a changed task, backend, budget, strategy, seed or topology tunes
# again into the same database.
#
# Without tuning: with TUNE_ENGINE_OFFLINE=ON, or when OUTPUT_HEADER lies
# outside the build tree (a header checked in with the sources), the existing
# header is compiled as it is; it must exist.
option(TUNE_ENGINE_OFFLINE "Compile tuned kernels from their existing headers; never tune at build time" OFF)

# In tune_engine_add_tuned_kernel(): arg_<NAME> defaults to `default` and must match `form`.
macro(_tune_engine_number_argument name default form what)
  if(NOT DEFINED arg_${name})
    set(arg_${name} ${default})
  endif()
  if(NOT arg_${name} MATCHES "${form}")
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): ${name} '${arg_${name}}' is not ${what}")
  endif()
endmacro()

function(tune_engine_add_tuned_kernel)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TASK;TARGET;BACKEND;BUDGET;STRATEGY;SEED;TOPOLOGY;DB;OUTPUT_HEADER"
                        "")
  set(fn tune_engine_add_tuned_kernel)
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments '${arg_UNPARSED_ARGUMENTS}'; it takes NAME, TASK, TARGET, BACKEND, "
                        "BUDGET, STRATEGY, SEED, TOPOLOGY, DB and OUTPUT_HEADER")
  endif()
  if(NOT arg_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${fn}: NAME '${arg_NAME}' is not a C identifier; give e.g. NAME mm")
  endif()
  if(NOT arg_TARGET OR NOT TARGET ${arg_TARGET})
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): TARGET '${arg_TARGET}' is not a target; "
                        "create it first (add_executable/add_library) and pass its name")
  endif()
  # The form only; `tune-engine tune` checks the shape.
  if(NOT arg_TASK MATCHES "^(matmul:[0-9]+x[0-9]+x[0-9]+|bmm:[0-9]+x[0-9]+x[0-9]+x[0-9]+(:nn|:tn|:nt)?|conv2d:[0-9]+x[0-9]+x[0-9]+x[0-9]+:[0-9]+x[0-9]+x[0-9]+(:s[0-9]+)?(:p[0-9]+)?)$")
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): TASK '${arg_TASK}' is not a built-in task; write "
                        "matmul:NxKxM (e.g. matmul:512x1024x1024), bmm:BxNxKxM[:nn|tn|nt] or "
                        "conv2d:BxCxHxW:FxKHxKW[:sS][:pP]")
  endif()
  if(NOT DEFINED arg_BACKEND)
    set(arg_BACKEND cpu)
  endif()
  if(NOT arg_BACKEND STREQUAL "cpu")
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): BACKEND '${arg_BACKEND}': only cpu kernels can be compiled into "
                        "a target; drop BACKEND or write BACKEND cpu")
  endif()
  _tune_engine_number_argument(BUDGET 150 "^[1-9][0-9]*$" "a positive number of trials")
  _tune_engine_number_argument(SEED 1 "^[0-9]+$" "a non-negative integer")
  if(NOT arg_TOPOLOGY)
    get_property(arg_TOPOLOGY GLOBAL PROPERTY TUNE_ENGINE_DEFAULT_TOPOLOGY)
  endif()
  get_filename_component(arg_TOPOLOGY "${arg_TOPOLOGY}" ABSOLUTE)
  if(NOT EXISTS "${arg_TOPOLOGY}")
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): TOPOLOGY ${arg_TOPOLOGY} does not exist")
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/tune_engine)
  if(NOT arg_DB)
    set(arg_DB ${dir}/tune-engine.db)
  endif()
  # A PostgreSQL store (a postgresql:// URI, or libpq's keyword form, which
  # starts with one of its connection keywords: the list of
  # storage/src/postgres_store.cpp) is shared as it is; a file is taken
  # relative to the build folder.
  set(server_store OFF)
  if(arg_DB MATCHES "^postgres(ql)?://" OR arg_DB MATCHES "^[ \t]*(host|hostaddr|port|dbname|user|password|passfile|service|options|application_name|fallback_application_name|client_encoding|connect_timeout|keepalives|keepalives_idle|keepalives_interval|keepalives_count|tcp_user_timeout|sslmode|sslcompression|sslcert|sslkey|sslpassword|sslrootcert|sslcrl|sslcrldir|sslsni|requirepeer|ssl_min_protocol_version|ssl_max_protocol_version|gssencmode|krbsrvname|gsslib|replication|target_session_attrs)[ \t]*=")
    set(server_store ON)
  else()
    get_filename_component(arg_DB "${arg_DB}" ABSOLUTE BASE_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT arg_OUTPUT_HEADER)
    set(arg_OUTPUT_HEADER ${dir}/${arg_NAME}.hpp)
  endif()
  get_filename_component(header "${arg_OUTPUT_HEADER}" ABSOLUTE BASE_DIR ${CMAKE_CURRENT_BINARY_DIR})
  get_filename_component(header_dir "${header}" DIRECTORY)
  get_filename_component(header_file "${header}" NAME)
  cmake_path(IS_PREFIX CMAKE_BINARY_DIR "${header}" NORMALIZE header_in_build_tree)

  set(source ${dir}/${arg_NAME}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT
       "// The tuned kernel ${arg_NAME} (${arg_TASK}); its flags come with the header.\n#define TUNE_ENGINE_IMPLEMENT_${arg_NAME}\n#include \"${header_file}\"\n")
  target_sources(${arg_TARGET} PRIVATE ${source})
  target_include_directories(${arg_TARGET} PRIVATE ${header_dir})

  if(TUNE_ENGINE_OFFLINE OR NOT header_in_build_tree)
    if(NOT EXISTS "${header}")
      message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): OUTPUT_HEADER ${header} does not exist and "
                          "${fn} does not tune here (TUNE_ENGINE_OFFLINE=${TUNE_ENGINE_OFFLINE}, header outside "
                          "the build tree); build once with TUNE_ENGINE_OFFLINE=OFF and the header in the build "
                          "tree, then copy ${arg_NAME}.hpp there")
    endif()
    # The flags line the header was emitted with.
    file(STRINGS "${header}" flags_line LIMIT_COUNT 1 REGEX "^// tune-engine flags: ")
    if(NOT flags_line)
      message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): ${header} has no '// tune-engine flags:' line; "
                          "it was not written by 'tune-engine emit': emit it again")
    endif()
    string(REGEX REPLACE "^// tune-engine flags: " "" flags "${flags_line}")
    separate_arguments(flags UNIX_COMMAND "${flags}")
    set_source_files_properties(${source} TARGET_DIRECTORY ${arg_TARGET} PROPERTIES
                                COMPILE_OPTIONS "${flags}" OBJECT_DEPENDS "${header}")
    return()
  endif()

  if(NOT TARGET tune::tune-engine)
    message(FATAL_ERROR "${fn}(NAME ${arg_NAME}): the tune-engine command (tune::tune-engine) is not part of this "
                        "build; find_package(tune-engine) a full install, or build with TUNE_ENGINE_OFFLINE=ON")
  endif()
  # What the result depends on: a change rewrites this file, which makes the
  # tuning step run again; the step itself tunes only when it changed.
  set(request ${dir}/${arg_NAME}.request)
  file(CONFIGURE OUTPUT ${request} CONTENT
       "task=${arg_TASK}\nbackend=${arg_BACKEND}\nbudget=${arg_BUDGET}\nstrategy=${arg_STRATEGY}\nseed=${arg_SEED}\ntopology=${arg_TOPOLOGY}\n")
  set(flags_file ${dir}/${arg_NAME}.flags)
  add_custom_command(
    OUTPUT ${header} ${flags_file}
    COMMAND ${CMAKE_COMMAND} -DTUNE_ENGINE=$<TARGET_FILE:tune::tune-engine> -DNAME=${arg_NAME} -DTASK=${arg_TASK}
            -DBACKEND=${arg_BACKEND} -DBUDGET=${arg_BUDGET} -DSTRATEGY=${arg_STRATEGY} -DSEED=${arg_SEED}
            -DTOPOLOGY=${arg_TOPOLOGY} -DDB=${arg_DB} -DSERVER_STORE=${server_store} -DHEADER=${header} -DFLAGS=${flags_file} -DREQUEST=${request}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tune_engine_tune_kernel.cmake
    DEPENDS ${request} ${arg_TOPOLOGY} tune::tune-engine ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/tune_engine_tune_kernel.cmake
    COMMENT "tune-engine: ${arg_NAME} = ${arg_TASK} (${arg_BACKEND}, ${arg_BUDGET} trials)"
    USES_TERMINAL VERBATIM)
  add_custom_target(${arg_NAME}_tuned_kernel DEPENDS ${header} ${flags_file})
  add_dependencies(${arg_TARGET} ${arg_NAME}_tuned_kernel)
  # GCC and Clang read the flags from the file tuning wrote (@file).
  set_source_files_properties(${source} TARGET_DIRECTORY ${arg_TARGET} PROPERTIES
                              COMPILE_OPTIONS "@${flags_file}" OBJECT_DEPENDS "${header};${flags_file}")
endfunction()
