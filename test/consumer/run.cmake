# cmake -DSOURCE_DIR=<repo> -DBINARY_DIR=<redlock build> -DWORK_DIR=<scratch> -DCXX=<compiler> -P run.cmake
#
# Installs the redlock build tree into WORK_DIR/prefix, then configures, builds and runs test/consumer against
# that prefix, as a user of the installed package would. Any failing step is a FATAL_ERROR.
cmake_minimum_required(VERSION 3.20)

foreach(var SOURCE_DIR BINARY_DIR WORK_DIR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})

# Build the consumer like its parent: same generator and build type, and the same sanitizer runtime at link time
# (the static library carries sanitizer instrumentation but, by design, exports no sanitizer flags).
load_cache(${BINARY_DIR} READ_WITH_PREFIX parent_
  CMAKE_GENERATOR CMAKE_MAKE_PROGRAM CMAKE_BUILD_TYPE REDLOCK_SANITIZE)
set(configure_args -G ${parent_CMAKE_GENERATOR})
if(parent_CMAKE_MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${parent_CMAKE_MAKE_PROGRAM})
endif()
if(parent_CMAKE_BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${parent_CMAKE_BUILD_TYPE})
endif()
if(parent_REDLOCK_SANITIZE)
  list(APPEND configure_args -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${parent_REDLOCK_SANITIZE})
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " command "${ARGN}")
    message(FATAL_ERROR "consumer: ${what} failed (${rc})\n$ ${command}\n${out}")
  endif()
  message(STATUS "consumer: ${what}: ok")
endfunction()

run_step("install ${BINARY_DIR} into ${prefix}"
  ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
run_step("configure test/consumer"
  ${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer -B ${build} ${configure_args}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})

# The package must come from the scratch prefix, not from some other installed copy.
load_cache(${build} READ_WITH_PREFIX consumer_ redlock_DIR)
cmake_path(IS_PREFIX prefix "${consumer_redlock_DIR}" NORMALIZE from_prefix)
if(NOT from_prefix)
  message(FATAL_ERROR "consumer: redlock was found in ${consumer_redlock_DIR}, not under ${prefix}")
endif()

run_step("build" ${CMAKE_COMMAND} --build ${build})
run_step("run redlock_consumer" ${build}/redlock_consumer)
