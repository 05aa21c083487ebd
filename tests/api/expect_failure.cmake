# Runs a test binary that must fail (cmake -DPROGRAM=... -DCASES_DIR=... -P expect_failure.cmake)
# and asserts how: exit status 1, the law's failure with its diagnosis and
# shrunk case in the output, and exactly the case files it names saved in CASES_DIR.
file(REMOVE_RECURSE "${CASES_DIR}")
set(ENV{ATTNCHECK_REGRESSION_DIR} "${CASES_DIR}")
execute_process(COMMAND "${PROGRAM}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit status 1 (a failed test), got '${rc}':\n${all}")
endif()
foreach(needle "[  FAILED  ] ApiMacroFails.Unscaled/query_sensitivity"
               "query_sensitivity failed on ApiMacroFails.Unscaled"
               "diagnosis: behaves like: attention without the 1/sqrt(d) scale"
               "shrunk case (" "rerun: ATTNCHECK_SEED=" "saved to ${CASES_DIR}/query_sensitivity-")
  string(FIND "${all}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected '${needle}' in the output:\n${all}")
  endif()
endforeach()
file(GLOB saved "${CASES_DIR}/query_sensitivity-*.json")
list(LENGTH saved n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one case file in ${CASES_DIR}, found ${n}: ${saved}")
endif()
