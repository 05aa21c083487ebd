# Runs a test binary that must fail and asserts how:
#   cmake -DPROGRAM=... -DCASES_DIR=... -DSOURCE=<its .cpp> -DATTNCHECK=<the CLI> -P expect_failure.cmake
# exit status 1, the law's failure with its diagnosis and shrunk case in the
# output, reported at the ATTNCHECK_TEST line of SOURCE (not at gtest.hpp),
# exactly the case files it names saved in CASES_DIR, and every command the
# failure prints doing what it says (issue #34): the rerun line fails the same
# way again, `attncheck replay FILE --impl NAME` replays the saved case on a
# built-in, and plain `attncheck replay FILE` refuses it naming the rerun.
file(REMOVE_RECURSE "${CASES_DIR}")
set(ENV{ATTNCHECK_REGRESSION_DIR} "${CASES_DIR}")
execute_process(COMMAND "${PROGRAM}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 (a failed test), got '${rc}':\n${all}")
endif()

# Where the failure is reported: the line of ATTNCHECK_TEST_WITH in the test's own file.
file(STRINGS "${SOURCE}" lines)
set(n 0)
set(at_line "")
foreach(l IN LISTS lines)
  math(EXPR n "${n} + 1")
  if(l MATCHES "^ATTNCHECK_TEST_WITH\\(ApiMacroFails")
    set(at_line ${n})
  endif()
endforeach()
if(NOT at_line)
  message(FATAL_ERROR "no ATTNCHECK_TEST_WITH(ApiMacroFails line in ${SOURCE}")
endif()
get_filename_component(source_name "${SOURCE}" NAME)

foreach(needle "[  FAILED  ] ApiMacroFails.Unscaled/query_sensitivity"
               "${source_name}:${at_line}: Failure"
               "query_sensitivity failed on ApiMacroFails.Unscaled"
               "diagnosis: behaves like: attention without the 1/sqrt(d) scale"
               "shrunk case (" "rerun: ATTNCHECK_SEED=" "saved to ${CASES_DIR}/query_sensitivity-"
               "attncheck replay ${CASES_DIR}/query_sensitivity-")
  string(FIND "${all}" "${needle}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "expected '${needle}' in the output:\n${all}")
  endif()
endforeach()
string(FIND "${all}" "gtest.hpp:" found)
if(NOT found EQUAL -1)
  message(FATAL_ERROR "the failure is reported at the installed header, not the test:\n${all}")
endif()
file(GLOB saved "${CASES_DIR}/query_sensitivity-*.json")
list(LENGTH saved count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one case file in ${CASES_DIR}, found ${count}: ${saved}")
endif()

# The rerun line, run as printed (a plain path and filter: no shell quoting to undo).
if(NOT all MATCHES "rerun: ATTNCHECK_SEED=([0-9]+) ([^ \n]+) --gtest_filter=([^ \n]+)")
  message(FATAL_ERROR "no runnable rerun line in the output:\n${all}")
endif()
set(seed "${CMAKE_MATCH_1}")
set(binary "${CMAKE_MATCH_2}")
set(filter "${CMAKE_MATCH_3}")
if(NOT filter STREQUAL "ApiMacroFails.Unscaled/query_sensitivity")
  message(FATAL_ERROR "the rerun's filter '${filter}' is not the failing test's name")
endif()
unset(ENV{ATTNCHECK_REGRESSION_DIR})
set(ENV{ATTNCHECK_SEED} "${seed}")
execute_process(COMMAND "${binary}" "--gtest_filter=${filter}" RESULT_VARIABLE rc2 OUTPUT_VARIABLE again ERROR_VARIABLE again_err)
if(NOT rc2 EQUAL 1)
  message(FATAL_ERROR "the rerun line exited '${rc2}', not 1:\n${again}${again_err}")
endif()
string(REGEX MATCH "shrunk case \\([^\n]*\n[^\n]*" first_case "${all}")
string(FIND "${again}" "${first_case}" found)
if(found EQUAL -1 OR first_case STREQUAL "")
  message(FATAL_ERROR "the rerun did not find the same shrunk case '${first_case}':\n${again}")
endif()

# The saved case: replayed on a built-in build of the kernel it fails again
# (exit 1); as recorded (cpp:, a callable in the test binary) it is refused
# (exit 2) with the rerun command.
execute_process(COMMAND "${ATTNCHECK}" replay ${saved} --impl seed_unscaled RESULT_VARIABLE rc3 OUTPUT_VARIABLE r3
                ERROR_VARIABLE r3_err)
if(NOT rc3 EQUAL 1 OR NOT r3 MATCHES "FAIL  query_sensitivity-")
  message(FATAL_ERROR "attncheck replay ${saved} --impl seed_unscaled: exit ${rc3}, expected 1 and FAIL:\n${r3}${r3_err}")
endif()
execute_process(COMMAND "${ATTNCHECK}" replay ${saved} RESULT_VARIABLE rc4 OUTPUT_VARIABLE r4 ERROR_VARIABLE r4_err)
string(FIND "${r4_err}" "ATTNCHECK_SEED=${seed} <test binary> --gtest_filter=${filter}" found)
if(NOT rc4 EQUAL 2 OR found EQUAL -1)
  message(FATAL_ERROR "attncheck replay ${saved}: exit ${rc4}, expected 2 naming the rerun:\n${r4}${r4_err}")
endif()
