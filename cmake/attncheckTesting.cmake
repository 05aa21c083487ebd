# Installed with the package and included by attncheckConfig.cmake:
#   attncheck_add_test(NAME <test> PLUGIN <target> [ARGS <check flags>...])
# registers `attncheck check --plugin $<TARGET_FILE:target> <ARGS>` as a CTest
# test of the consumer: it passes exactly when the check does (exit 0; 1 a law
# failed, 2 it could not run). The plugin runs in attncheck's child process, so
# its crash or hang fails that test, not the test run.
#
# Example usage:
#   add_library(my_plugin MODULE my_plugin.c)
#   target_link_libraries(my_plugin PRIVATE attncheck::plugin)
#   attncheck_add_test(NAME my_plugin_laws PLUGIN my_plugin ARGS --cases 200 --seed 42 --junit laws.xml)
include_guard(GLOBAL)

function(attncheck_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;PLUGIN" "ARGS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attncheck_add_test: unexpected arguments '${arg_UNPARSED_ARGUMENTS}' "
                        "(the form is: attncheck_add_test(NAME test PLUGIN target [ARGS flag...]))")
  endif()
  if(NOT arg_NAME OR NOT arg_PLUGIN)
    message(FATAL_ERROR "attncheck_add_test: NAME and PLUGIN are both required "
                        "(attncheck_add_test(NAME test PLUGIN target [ARGS flag...]))")
  endif()
  if(NOT TARGET ${arg_PLUGIN})
    message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): PLUGIN ${arg_PLUGIN} is not a target of this project "
                        "(add_library(${arg_PLUGIN} MODULE ...) first)")
  endif()
  if(NOT TARGET attncheck::cli)
    message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): attncheck::cli is not defined; call find_package(attncheck) first")
  endif()
  add_test(NAME ${arg_NAME}
           COMMAND $<TARGET_FILE:attncheck::cli> check --plugin $<TARGET_FILE:${arg_PLUGIN}> ${arg_ARGS})
endfunction()
