# Issue #30, untrusted text and reports after an interrupt (text_cli.py): every
# report format well-formed and escaped for any bytes, a clean console, the same
# limits for every JSON input, FIFOs and devices refused, no stale or aliased
# report. Plus the unit tests of the escaping and of the report files.
set(text_scenarios junit-any-bytes markdown-escaped console-clean console-case-names config-limits stale-reports
    report-aliases)
set(text_python_scenarios)
if(TARGET attncheck_python_plugin)
  list(APPEND text_python_scenarios python-exception)
endif()
foreach(scenario IN LISTS text_scenarios text_python_scenarios)
  add_test(NAME cli_text_${scenario}
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/text_cli.py $<TARGET_FILE:attncheck>
                   ${scenario} ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-plugins
                   ${CMAKE_CURRENT_BINARY_DIR}/text)
  set_tests_properties(cli_text_${scenario} PROPERTIES LABELS "cli;e2e" TIMEOUT 120)
endforeach()
# A load error's reason, from a C plugin and (when the bridge is built) from Python.
set(_load_errors_python "")
if(TARGET attncheck_python_plugin)
  set(_load_errors_python python)
endif()
add_test(NAME cli_text_console-load-errors
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/text_cli.py $<TARGET_FILE:attncheck>
                 console-load-errors ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/test-plugins
                 ${CMAKE_CURRENT_BINARY_DIR}/text ${_load_errors_python})
set_tests_properties(cli_text_console-load-errors PROPERTIES LABELS "cli;e2e" TIMEOUT 120)

add_executable(attncheck_text_tests text_safety_test.cpp report_files_test.cpp)
target_link_libraries(attncheck_text_tests PRIVATE attncheck_lib GTest::gtest_main nlohmann_json::nlohmann_json)
gtest_discover_tests(attncheck_text_tests PROPERTIES LABELS cli DISCOVERY_TIMEOUT 60)
