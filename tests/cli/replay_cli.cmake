# Issue #34, replaying as a user meets it (replay_cli.py): a case saved with a
# relative plugin path replayed from another folder; a timeout's reproduce line
# run as printed. Seconds each.
foreach(scenario relative-plugin timeout-reproduce)
  add_test(NAME cli_replay_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/replay_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/plugins ${PROJECT_BINARY_DIR}/test-plugins
                   ${CMAKE_CURRENT_BINARY_DIR}/replay)
  set_tests_properties(cli_replay_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 120)
endforeach()
