# Issue #30, isolation and time limits end to end (tests/cli/isolation_cli.py).
foreach(scenario busy-machine two-plugins daemon-outlives)
  add_test(NAME cli_isolation_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/isolation_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/test-plugins ${CMAKE_CURRENT_BINARY_DIR}/isolation)
  set_tests_properties(cli_isolation_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 300)
endforeach()
