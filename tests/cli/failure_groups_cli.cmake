# Issue #34: failing laws that likely share one cause, grouped in every report
# (report/failure_groups.h): the grouping and each rendering
# (failure_groups_test.cpp), and a zoo member that fails many laws checked by
# the program, its JSON against tests/cli/schema/report.schema.json and its
# JUnit against junit-10.xsd; the example plugin with its sums narrowed to
# _Float16 (tests/plugins/sixteen_bit_sums_plugin.c), each failure diagnosed
# "accumulates in 16-bit" and all of them one group (failure_groups_cli.py).
add_executable(attncheck_failure_groups_test failure_groups_test.cpp)
target_link_libraries(attncheck_failure_groups_test PRIVATE attncheck_lib GTest::gtest_main nlohmann_json::nlohmann_json)
gtest_discover_tests(attncheck_failure_groups_test PROPERTIES LABELS cli DISCOVERY_TIMEOUT 60)

add_test(NAME cli_failure_groups
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/failure_groups_cli.py $<TARGET_FILE:attncheck>
                 ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-plugins ${CMAKE_CURRENT_BINARY_DIR}/failure_groups)
# Two whole checks (a zoo member over every law at 40 cases, then a plugin): label long, which
# CI's sanitizer pass leaves to .ci/nightly's (31 s under ASan); the Release pass runs it.
set_tests_properties(cli_failure_groups PROPERTIES LABELS "cli;e2e;long" TIMEOUT 300)
