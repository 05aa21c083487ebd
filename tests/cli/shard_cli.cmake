# Issue #34, past one machine: check --shard INDEX/COUNT and attncheck merge
# (docs/ci.md). Below the command line: the partition, the environment, the
# merge's refusals and finishing, the strict JSON reader (seconds).
add_executable(attncheck_shard_tests shard_test.cpp)
target_link_libraries(attncheck_shard_tests PRIVATE attncheck_lib GTest::gtest_main nlohmann_json::nlohmann_json)
gtest_discover_tests(attncheck_shard_tests PROPERTIES LABELS cli DISCOVERY_TIMEOUT 60)
# End to end (shard_cli.py): merged shards equal one run in every format
# (N = 1, 2, 3 and more shards than work items; about a minute), the
# environment's shards, replay's split of its case files, the refusals (seconds).
foreach(scenario same-report environment replay refusals)
  add_test(NAME cli_shard_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/shard_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_BINARY_DIR}/test-plugins ${CMAKE_CURRENT_BINARY_DIR}/shard/${scenario})
  set_tests_properties(cli_shard_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 600)
endforeach()
# A minute and more of whole checks: the sanitizer pass in CI leaves it to .ci/nightly.
set_tests_properties(cli_shard_same-report PROPERTIES LABELS "cli;e2e;long")
