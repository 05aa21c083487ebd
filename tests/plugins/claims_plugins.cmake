# Issue #34, diagnoses that claim only what was measured: the example plugin
# with its sums narrowed to f16 (tests/cli/failure_groups_cli.py runs it).
attncheck_test_plugin(attncheck_test_sixteen_bit_sums_plugin sixteen_bit_sums_plugin sixteen_bit_sums_plugin.c 11 NONE)
target_include_directories(attncheck_test_sixteen_bit_sums_plugin PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
