# Model-checks a SPIN model (test/model/fencing.pml, fair_queue.pml) with SPIN, per protocol variant.
#
#   cmake -DSPIN=/usr/bin/spin -DCC=cc -DMODEL=/path/to/fencing.pml -DWORK_DIR=/tmp/spinwork \
#         [-DVARIANTS=0,1,2,3] -DEXPECT=... [-DLIVENESS=ON] [-DCONFIGS=...] [-DPAN_CFLAGS=-O1] [-DDEPTH=10000] \
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
# Every other variant is a negative control, and EXPECT pins how it must fail: entries separated by "|",
# "<variant>=<kind>[:<text>,<text>...]", kind one of assertion, non-progress, acceptance (an assertion
# violation, a non-progress cycle, an acceptance cycle); with texts, the violated assertion's expression (as
# pan prints it) must contain one of them, say the variable of the property it breaks. A negative control
# passes once one of its runs reports that error (its remaining runs are skipped); a run that reports
# any other error (another kind, another assertion, an invalid end state) fails it, since the broken
# protocol must fail for the reason it was built to show, not for one that would hide it. Every
# variant but 0 needs an entry. Counterexamples are replayed and narrated (the model's "MSC:" lines).

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

# EXPECT: expect_kind_<variant> (pan's words for the error) and expect_texts_<variant>.
set(kind_assertion "assertion violated")
set(kind_non-progress "non-progress cycle")
set(kind_acceptance "acceptance cycle")
if(DEFINED EXPECT AND NOT "${EXPECT}" STREQUAL "")
  string(REPLACE "|" ";" expect_entries "${EXPECT}")
  foreach(entry ${expect_entries})
    if(NOT entry MATCHES "^([0-9]+)=(assertion|non-progress|acceptance)(:.+)?$")
      message(FATAL_ERROR "run_spin.cmake: EXPECT entry \"${entry}\" is not "
        "<variant>=<assertion|non-progress|acceptance>[:<text>,...]")
    endif()
    set(n "${CMAKE_MATCH_1}")
    set(kind "${CMAKE_MATCH_2}")
    set(texts "${CMAKE_MATCH_3}")
    set(expect_kind_${n} "${kind_${kind}}")
    string(REGEX REPLACE "^:" "" texts "${texts}")
    string(REPLACE "," ";" expect_texts_${n} "${texts}")
  endforeach()
endif()
foreach(variant ${VARIANTS})
  if(NOT variant EQUAL 0 AND NOT DEFINED expect_kind_${variant})
    message(FATAL_ERROR "run_spin.cmake: EXPECT does not say how negative control ${variant} must fail")
  endif()
endforeach()

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
  set(violated FALSE)  # a negative control failed as it must
  set(wrong FALSE)     # it failed otherwise
  set(expected "")
  if(NOT variant EQUAL 0)
    set(expected "${expect_kind_${variant}}")
    if(expect_texts_${variant})
      list(JOIN expect_texts_${variant} " or " texts)
      string(APPEND expected " on ${texts}")
    endif()
  endif()
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
      if(violated OR wrong)
        break()  # a negative control that already failed, as it must or not
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

      # The first error line ("pan:1: assertion violated ((ahead[c]& ~(gone))==0) (at depth 92)", "pan:1:
      # non-progress cycle (at depth 4)", "pan:1: invalid end state (at depth 7)"), not the header's list of
      # what was searched for ("non-progress cycles +").
      set(error_line "")
      if(report MATCHES "pan:[0-9]+: ([^\n]*)")
        set(error_line "${CMAKE_MATCH_1}")
      endif()
      if(variant EQUAL 0)
        if(NOT errors EQUAL 0)
          list(APPEND failures "${what} (the protocol) has ${errors} error(s): ${error_line}")
        elseif(report MATCHES "depth too small|out of memory|search not completed|max search depth")
          list(APPEND failures "${what}: the search was not exhaustive")
        endif()
      elseif(NOT errors EQUAL 0)
        set(as_pinned FALSE)
        string(FIND "${error_line}" "${expect_kind_${variant}}" at)
        if(at EQUAL 0)
          set(as_pinned TRUE)
          if(expect_texts_${variant})
            set(as_pinned FALSE)
            foreach(text ${expect_texts_${variant}})
              string(FIND "${error_line}" "${text}" at)
              if(NOT at EQUAL -1)
                set(as_pinned TRUE)
              endif()
            endforeach()
          endif()
        endif()
        if(as_pinned)
          set(violated TRUE)
          message(STATUS "${what}: ${expected}, as this negative control must")
        else()
          set(wrong TRUE)
          list(APPEND failures "${what}: \"${error_line}\", but this negative control must fail with ${expected}")
        endif()
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
  if(NOT variant EQUAL 0 AND NOT violated AND NOT wrong)
    list(APPEND failures "variant ${variant} (a negative control) found no ${expected}")
  endif()
endforeach()

if(failures)
  list(JOIN failures "\n  " failures)
  message(FATAL_ERROR "SPIN model check of ${model_name} failed:\n  ${failures}\n"
    "(reports in ${WORK_DIR}/variant_*/*/pan.out)")
endif()
message(STATUS "SPIN: ${model_name}: variant 0 has no errors, every negative control fails as it must")
