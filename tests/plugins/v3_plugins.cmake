# ABI version 3's first slice (issue #32): variants of the v3 transport plugin
# (v3_echo_plugin.c), each a way to export or declare version 3, for
# plugin_host_v3_test.cpp; and the v2 example's kernel exported through version 2 and
# through version 3 (v2_kernel_as_v3_plugin.c), for v3_same_verdicts.py.
set(ATTNCHECK_V3_ECHO_VARIANTS
  "echo:NONE"
  "echo_with_lower:V3_WITH_LOWER"
  "echo_backward:V3_BACKWARD"
  "echo_address:V3_ADDRESS_IN_LSE"
  "echo_declares_v3:V3_FEATURES=0x17fffu,V3_KV_FORMATS=0x1c0u,V3_NUMERICS=0x3u,V3_PROMISES=0x5u"
  "echo_wrong_abi:V3_WRONG_ABI"
  "echo_null_forward:V3_NULL_FORWARD"
  "echo_unknown_feature:V3_FEATURES=0x207ffu"
  "echo_alibi_batch_alone:V3_FEATURES=0x4000u"
  "echo_unknown_format:V3_FEATURES=0x27ffu,V3_KV_FORMATS=0x281u"
  "echo_formats_dtype_only:V3_FEATURES=0x27ffu,V3_KV_FORMATS=0x1u"
  "echo_formats_without_feature:V3_KV_FORMATS=0x80u"
  "echo_unknown_numerics:V3_NUMERICS=0x4u"
  "echo_q8_without_blocks:V3_FEATURES=0x27ffu,V3_KV_FORMATS=0x20u,V3_NUMERICS=0x1u"
  "echo_precision_without_16bit:V3_FEATURES=0x27ffu,V3_KV_FORMATS=0x8u,V3_NUMERICS=0x2u"
  "echo_unknown_promise:V3_PROMISES=0x8u"
  "echo_det_backward_without_backward:V3_PROMISES=0x2u")
foreach(variant IN LISTS ATTNCHECK_V3_ECHO_VARIANTS)
  string(REPLACE ":" ";" parts ${variant})
  list(GET parts 0 name)
  list(GET parts 1 defines)
  string(REPLACE "," ";" defines ${defines})
  attncheck_test_plugin(attncheck_test_v3_${name}_plugin v3_${name}_plugin v3_echo_plugin.c 11 "${defines}")
endforeach()

# The v3 example's kernel promising determinism and summing keys in an order a per-call
# counter picks (v3_cli.py, scenario promises); and the same promising nothing.
attncheck_test_plugin(attncheck_test_v3_counter_order_plugin v3_counter_order_plugin v3_counter_order_plugin.c 99
                      NONE)
attncheck_test_plugin(attncheck_test_v3_counter_order_unpromised_plugin v3_counter_order_unpromised_plugin
                      v3_counter_order_plugin.c 99 NO_PROMISE)

# One kernel (the v2 example's, with a fault added), exported once through each version.
attncheck_test_plugin(attncheck_test_v2_kernel_as_v2_plugin v2_kernel_as_v2_plugin v2_kernel_as_v3_plugin.c 99 NONE)
attncheck_test_plugin(attncheck_test_v2_kernel_as_v3_plugin v2_kernel_as_v3_plugin v2_kernel_as_v3_plugin.c 99
                      EXPORT_AS_V3)
# The example's kernel, correct, declaring v3 features, formats, numerics and promises.
attncheck_test_plugin(attncheck_test_v3_declares_unjudged_plugin v3_declares_unjudged_plugin
                      v2_kernel_as_v3_plugin.c 99 "EXPORT_AS_V3;CORRECT_DECLARES_V3")

add_executable(plugin_host_v3_test plugin_host_v3_test.cpp)
target_link_libraries(plugin_host_v3_test PRIVATE attncheck_lib GTest::gtest_main)
target_include_directories(plugin_host_v3_test PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
target_compile_definitions(plugin_host_v3_test PRIVATE ATTNCHECK_TEST_PLUGIN_DIR="${ATTNCHECK_TEST_PLUGIN_DIR}")
add_dependencies(plugin_host_v3_test ${attncheck_test_plugin_targets})
gtest_discover_tests(plugin_host_v3_test PROPERTIES LABELS plugin)

# The same, through the command line (tests/plugins/v3_cli.py): a few one- and two-law checks.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(scenario same-verdicts refused not-checked example promises)
  add_test(NAME plugin_v3_cli_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/v3_cli.py $<TARGET_FILE:attncheck> ${scenario}
                   ${ATTNCHECK_TEST_PLUGIN_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/v3_cli
                   ${PROJECT_BINARY_DIR}/plugins)
  set_tests_properties(plugin_v3_cli_${scenario} PROPERTIES LABELS "cli;plugin" TIMEOUT 120)
endforeach()
