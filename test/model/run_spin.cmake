# Model-checks a SPIN model (test/model/fencing.pml, fair_queue.pml) with SPIN, per protocol variant.
#
#   cmake -DSPIN=/usr/bin/spin -DCC=cc -DMODEL=/path/to/fencing.pml -DWORK_DIR=/tmp/spinwork \
#         [-DVARIANTS=0,1,2,3] [-DLIVENESS=ON] [-DCONFIGS=...] [-DPAN_CFLAGS=-O1] [-DDEPTH=10000] \
#         -P run_spin.cmake
#
# For each variant N (VARIANTS, default 0;1;2;3; "," separates too) and each configuration (CONFIGS,
# default one with no define) it generates the verifier with `spin -a -DVARIANT=N <config's defines>` in
# WORK_DIR/variant_N/<run>, compiles pan.c with -DSAFETY and runs an exhaustive search (`pan -m<DEPTH>`).
# With LIVENESS=ON it also generates the verifier with -DNP (spin and cc both get it), and runs the
# non-progress search under weak fairness (`pan -m<DEPTH> -l -f`).
#
# CONFIGS: configurations separated by ";" or "|", each a list of spin defines separated by ",":
# "DOWN=2|HOLDER=1,FAULTS=0" is two configurations, the second with two defines. A configuration
# prefixed "safety:" gets only the safety search (one too large for the non-progress search).
# PAN_CFLAGS: extra flags for compiling pan.c, after the default ones (e.g. -O1: faster to build,
# slower to run), ";" or "," separated.
#
# Variant 0, the protocol, must report "errors: 0" in every run, and every search must be exhaustive.
# Every other variant is a negative control: it passes once one of its runs reports an assertion
# violation, a non-progress cycle or an acceptance cycle (its remaining runs are skipped); its
# counterexample is replayed and narrated (the model's "MSC:" lines).

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
string(REPLACE "," ";" VARIANTS "${VARIANTS}")
if(NOT DEFINED DEPTH OR "${DEPTH}" STREQUAL "")
  set(DEPTH 10000)
endif()
if(NOT DEFINED LIVENESS)
  set(LIVENESS OFF)
endif()
# Configurations: "" stands for the one without defines.
set(configs "")
if(DEFINED CONFIGS AND NOT "${CONFIGS}" STREQUAL "")
  string(REPLACE "|" ";" configs "${CONFIGS}")
endif()
if(NOT configs)
  set(configs "-")
endif()
set(extra_cflags "")
if(DEFINED PAN_CFLAGS AND NOT "${PAN_CFLAGS}" STREQUAL "")
  string(REPLACE "," ";" extra_cflags "${PAN_CFLAGS}")
endif()
# -w: pan.c trips gcc's -Wstringop-overflow on its bounds-checked array indexing (harmless).
set(modes safety)
if(LIVENESS)
  list(APPEND modes liveness)
endif()

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
  set(vdir "${WORK_DIR}/variant_${variant}")
  file(REMOVE_RECURSE "${vdir}")
  set(violated FALSE)
  foreach(config ${configs})
    # "DOWN=2,HOLDER=1" -> -DDOWN=2 -DHOLDER=1
    set(defines "")
    set(config_label "")
    set(config_id "")
    set(config_modes ${modes})
    if(config MATCHES "^safety:(.*)$")
      set(config "${CMAKE_MATCH_1}")
      set(config_modes safety)
      if(config STREQUAL "")
        set(config "-")
      endif()
    endif()
    if(NOT config STREQUAL "-")
      string(REPLACE "," ";" config_defines "${config}")
      foreach(d ${config_defines})
        list(APPEND defines "-D${d}")
      endforeach()
      set(config_label " [${config}]")
      string(MAKE_C_IDENTIFIER "${config}" config_id)
      set(config_id "${config_id}_")
    endif()
    foreach(mode ${config_modes})
      if(violated)
        break()  # a negative control that already failed as it must
      endif()
      set(dir "${vdir}/${config_id}${mode}")
      file(MAKE_DIRECTORY "${dir}")
      # A local copy, so that pan writes its .trail file here and not next to the model.
      configure_file("${MODEL}" "${dir}/${model_name}" COPYONLY)
      if(mode STREQUAL "liveness")
        set(spin_defines -DVARIANT=${variant} ${defines} -DNP)
        set(cflags -DNP -O2 -w ${extra_cflags})
        set(pan_args -m${DEPTH} -l -f)
      else()
        set(spin_defines -DVARIANT=${variant} ${defines})
        set(cflags -DSAFETY -O2 -w ${extra_cflags})
        set(pan_args -m${DEPTH})
      endif()
      set(what "variant ${variant}${config_label} ${mode}")

      run("spin -a (${what})" "${dir}" ignored "${SPIN}" -a ${spin_defines} "${model_name}")
      run("compiling pan.c (${what})" "${dir}" ignored "${CC}" ${cflags} -o pan pan.c)
      # pan's exit status does not tell whether it found errors: its report does.
      execute_process(COMMAND "${dir}/pan" ${pan_args} WORKING_DIRECTORY "${dir}"
        RESULT_VARIABLE rc OUTPUT_VARIABLE report ERROR_VARIABLE err)
      string(APPEND report "${err}")
      file(WRITE "${dir}/pan.out" "${report}")

      if(NOT report MATCHES "errors: ([0-9]+)")
        message(FATAL_ERROR "${what}: pan did not report its errors (exit ${rc}):\n${report}")
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
      message(STATUS "${what}: errors: ${errors}, ${states} states stored, ${seconds} s, ${memory} MB")

      # The error lines ("pan:1: assertion violated ...", "pan:1: non-progress cycle (at depth n)"), not
      # the header's list of what was searched for ("non-progress cycles +").
      set(expected_kind "")
      if(report MATCHES "pan:[0-9]+: (assertion violated|non-progress cycle|acceptance cycle)")
        set(expected_kind "${CMAKE_MATCH_1}")
      endif()
      if(variant EQUAL 0)
        if(NOT errors EQUAL 0)
          list(APPEND failures "${what} (the protocol) has ${errors} error(s)")
        elseif(report MATCHES "depth too small|out of memory|search not completed|max search depth")
          list(APPEND failures "${what}: the search was not exhaustive")
        endif()
      elseif(NOT errors EQUAL 0 AND expected_kind)
        set(violated TRUE)
        message(STATUS "${what}: ${expected_kind}, as this negative control must")
      endif()

      # Narrate a counterexample (the expected one of a negative control, or a bug in variant 0).
      if(NOT errors EQUAL 0 AND EXISTS "${dir}/${model_name}.trail")
        execute_process(COMMAND "${SPIN}" -t ${spin_defines} "${model_name}" WORKING_DIRECTORY "${dir}"
          OUTPUT_VARIABLE replay ERROR_VARIABLE replay_err)
        string(APPEND replay "${replay_err}")
        file(WRITE "${dir}/counterexample.txt" "${replay}")
        string(REGEX MATCHALL "MSC: [^\n]*|<<<<<START OF CYCLE>>>>>|text of failed assertion: [^\n]*" steps "${replay}")
        list(JOIN steps "\n    " steps)
        string(REPLACE "MSC: " "" steps "${steps}")
        if(report MATCHES "assertion violated ([^\n]*)")
          message(STATUS "${what}: assertion violated ${CMAKE_MATCH_1}")
        endif()
        message(STATUS "${what}: counterexample:\n    ${steps}")
      endif()
    endforeach()
  endforeach()
  if(NOT variant EQUAL 0 AND NOT violated)
    list(APPEND failures
      "variant ${variant} (a negative control) found no assertion violation, non-progress or acceptance cycle")
  endif()
endforeach()

if(failures)
  list(JOIN failures "\n  " failures)
  message(FATAL_ERROR "SPIN model check of ${model_name} failed:\n  ${failures}\n"
    "(reports in ${WORK_DIR}/variant_*/*/pan.out)")
endif()
message(STATUS "SPIN: ${model_name}: variant 0 has no errors, every negative control fails as it must")
