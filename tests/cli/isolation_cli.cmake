# Issue #30, isolation and time limits end to end (tests/cli/isolation_cli.py).
foreach(scenario busy-machine two-plugins daemon-outlives)
  add_test(NAME cli_isolation_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/isolation_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/test-plugins ${CMAKE_CURRENT_BINARY_DIR}/isolation)
  set_tests_properties(cli_isolation_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 300)
endforeach()
# busy-machine is about time limits, which a sanitizer does not change: it holds both cores
# with 16 spinning processes for half a minute (a minute under asan, starving the test
# beside it), so CI's sanitizer pass leaves it to the Release pass and the nightly (label long).
set_tests_properties(cli_isolation_busy-machine PROPERTIES LABELS "cli;e2e;long")
