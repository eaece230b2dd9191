# Model-checks test/model/fencing.pml with SPIN, one run per protocol variant.
#
#   cmake -DSPIN=/usr/bin/spin -DCC=cc -DMODEL=/path/to/fencing.pml -DWORK_DIR=/tmp/spinwork \
#         -P run_spin.cmake
#
# For each variant N (VARIANTS, default 0;1;2;3) it generates the verifier with `spin -a -DVARIANT=N`
# in WORK_DIR/variant_N, compiles pan.c (safety only) and runs an exhaustive search. Variant 0, the
# two-phase protocol, must report "errors: 0". Variants 1..3 (the negative controls: single-phase
# INCR, commit without the ownership check, a restart that loses the fence counter) must report an
# assertion violation; their counterexample is replayed and narrated.

foreach(var SPIN CC MODEL WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_spin.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${MODEL}")
  message(FATAL_ERROR "run_spin.cmake: model ${MODEL} not found")
endif()
if(NOT DEFINED VARIANTS)
  set(VARIANTS 0 1 2 3)
endif()
# -w: pan.c trips gcc's -Wstringop-overflow on its bounds-checked array indexing (harmless).
set(PAN_CFLAGS -DSAFETY -O2 -w)
set(PAN_ARGS -m10000)

get_filename_component(model_name "${MODEL}" NAME)

# run(<step> <dir> <out-var> COMMAND...): runs a command, fails with its output if it fails.
function(run step dir out_var)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${dir}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}) in ${dir}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

set(failures "")
foreach(variant ${VARIANTS})
  set(dir "${WORK_DIR}/variant_${variant}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  # A local copy, so that pan writes its .trail file here and not next to the model.
  configure_file("${MODEL}" "${dir}/${model_name}" COPYONLY)

  run("spin -a (variant ${variant})" "${dir}" ignored "${SPIN}" -a -DVARIANT=${variant} "${model_name}")
  run("compiling pan.c (variant ${variant})" "${dir}" ignored "${CC}" ${PAN_CFLAGS} -o pan pan.c)
  # pan's exit status does not tell whether it found errors: its report does.
  execute_process(COMMAND "${dir}/pan" ${PAN_ARGS} WORKING_DIRECTORY "${dir}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE report ERROR_VARIABLE err)
  string(APPEND report "${err}")
  file(WRITE "${dir}/pan.out" "${report}")

  if(NOT report MATCHES "errors: ([0-9]+)")
    message(FATAL_ERROR "variant ${variant}: pan did not report its errors (exit ${rc}):\n${report}")
  endif()
  set(errors ${CMAKE_MATCH_1})
  set(states "?")
  if(report MATCHES "([0-9]+) states, stored")
    set(states ${CMAKE_MATCH_1})
  endif()
  set(seconds "?")
  if(report MATCHES "pan: elapsed time ([0-9.e+]+) seconds")
    set(seconds ${CMAKE_MATCH_1})
  endif()
  set(memory "?")
  if(report MATCHES "([0-9.]+)[ \t]+total actual memory usage")
    set(memory ${CMAKE_MATCH_1})
  endif()
  message(STATUS "variant ${variant}: errors: ${errors}, ${states} states stored, ${seconds} s, ${memory} MB")

  if(variant EQUAL 0)
    if(NOT errors EQUAL 0)
      list(APPEND failures "variant 0 (the two-phase protocol) has ${errors} error(s)")
    elseif(report MATCHES "depth too small|out of memory|search not completed|max search depth")
      list(APPEND failures "variant 0: the search was not exhaustive")
    endif()
  elseif(errors EQUAL 0)
    list(APPEND failures "variant ${variant} (a negative control) found no violation")
  elseif(NOT report MATCHES "assertion violated")
    list(APPEND failures "variant ${variant}: the error found is not an assertion violation")
  endif()

  # Narrate a counterexample (the expected one of a negative control, or a bug in variant 0).
  if(NOT errors EQUAL 0 AND EXISTS "${dir}/${model_name}.trail")
    execute_process(COMMAND "${SPIN}" -t -DVARIANT=${variant} "${model_name}" WORKING_DIRECTORY "${dir}"
      OUTPUT_VARIABLE replay ERROR_VARIABLE replay_err)
    string(APPEND replay "${replay_err}")
    file(WRITE "${dir}/counterexample.txt" "${replay}")
    string(REGEX MATCHALL "MSC: [^\n]*|text of failed assertion: [^\n]*" steps "${replay}")
    list(JOIN steps "\n    " steps)
    string(REPLACE "MSC: " "" steps "${steps}")
    if(report MATCHES "assertion violated ([^\n]*)")
      message(STATUS "variant ${variant}: assertion violated ${CMAKE_MATCH_1}")
    endif()
    message(STATUS "variant ${variant}: counterexample:\n    ${steps}")
  endif()
endforeach()

if(failures)
  list(JOIN failures "\n  " failures)
  message(FATAL_ERROR "SPIN model check of ${model_name} failed:\n  ${failures}\n"
    "(reports in ${WORK_DIR}/variant_*/pan.out)")
endif()
message(STATUS "SPIN: ${model_name}: variant 0 has no errors, every negative control violates an assertion")
