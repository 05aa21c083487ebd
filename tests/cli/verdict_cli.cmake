# Issue #30, earned verdicts (tests/cli/verdict_cli.py): each scenario a few
# small checks or replays of the test plugins in tests/plugins/verdict_plugins.cmake.
foreach(scenario feature-refused budget-spent budget-huge replay-judged-nothing replay-refused-files
                 expect-fail-no-judged process-laws-backward)
  add_test(NAME cli_verdict_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/verdict_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/test-plugins ${PROJECT_SOURCE_DIR}
                   ${CMAKE_CURRENT_BINARY_DIR}/verdict)
  set_tests_properties(cli_verdict_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 120)
endforeach()

# The rules run_law, check_implementation and RunBudget apply, on in-process
# implementations made to refuse, fault or stop (no plugin process).
add_executable(attncheck_verdict_tests earned_verdicts_test.cpp)
target_link_libraries(attncheck_verdict_tests PRIVATE attncheck_lib GTest::gtest_main)
gtest_discover_tests(attncheck_verdict_tests PROPERTIES LABELS cli DISCOVERY_TIMEOUT 60)
