# Issue #34, the terminal: the progress line, the run's wall time, Ctrl-C (tests/cli/terminal_run_cli.py).
foreach(scenario progress-jobs progress-serial wall-time interrupt-jobs interrupt-serial)
  add_test(NAME cli_terminal_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/terminal_run_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/test-plugins ${CMAKE_CURRENT_BINARY_DIR}/terminal_run)
  set_tests_properties(cli_terminal_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 300)
endforeach()
