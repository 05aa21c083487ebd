# Issue #30, isolation and time limits: the plugin with one behaviour per test
# (isolation_plugin.c), and the GoogleTest program that runs it (label "plugin").
attncheck_test_plugin(attncheck_test_isolation_plugin isolation_plugin isolation_plugin.c 11 NONE)
find_package(Threads REQUIRED)
target_link_libraries(attncheck_test_isolation_plugin PRIVATE Threads::Threads)

add_executable(plugin_isolation_test isolation_test.cpp)
target_link_libraries(plugin_isolation_test PRIVATE attncheck_lib GTest::gtest_main)
target_compile_definitions(plugin_isolation_test PRIVATE ATTNCHECK_TEST_PLUGIN_DIR="${ATTNCHECK_TEST_PLUGIN_DIR}")
add_dependencies(plugin_isolation_test attncheck_test_isolation_plugin)
gtest_discover_tests(plugin_isolation_test PROPERTIES LABELS plugin)

# The same plugin built to scribble whatever ATTNCHECK_TEST_ISOLATION says:
# two plugins of one run, one correct, one hostile (tests/cli/isolation_cli.py).
attncheck_test_plugin(attncheck_test_scribble_plugin scribble_plugin isolation_plugin.c 11 ISOLATION_ALWAYS_SCRIBBLE)
target_link_libraries(attncheck_test_scribble_plugin PRIVATE Threads::Threads)
