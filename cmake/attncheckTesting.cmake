# Installed with the package and included by attncheckConfig.cmake:
#   attncheck_add_test(NAME <test> PLUGIN <target> [SEED <N>|random] [ARGS <check flags>...])
# registers `attncheck check --plugin $<TARGET_FILE:target> --seed <N> <ARGS>` as a CTest
# test of the consumer: it passes exactly when the check does (exit 0; 1 a law
# failed, 2 it could not run). The plugin runs in attncheck's child process, so
# its crash or hang fails that test, not the test run.
#
# SEED: every CTest run checks the same cases, so a test that passed yesterday
# and fails today failed because the plugin changed. Default 1 (as ATTNCHECK_TEST's
# ATTNCHECK_SEED default). `SEED random` passes no --seed: each run draws a fresh
# seed (or takes $ATTNCHECK_SEED) and prints it. A --seed in ARGS is the seed too
# (then SEED must not be given).
#
# Example usage:
#   add_library(my_plugin MODULE my_plugin.c)
#   target_link_libraries(my_plugin PRIVATE attncheck::plugin)
#   attncheck_add_test(NAME my_plugin_laws PLUGIN my_plugin SEED 42 ARGS --cases 200 --junit laws.xml)
include_guard(GLOBAL)

function(attncheck_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;PLUGIN;SEED" "ARGS")
  set(form "attncheck_add_test(NAME test PLUGIN target [SEED N|random] [ARGS flag...])")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attncheck_add_test: unexpected arguments '${arg_UNPARSED_ARGUMENTS}' (the form is: ${form})")
  endif()
  if(NOT arg_NAME OR NOT arg_PLUGIN)
    message(FATAL_ERROR "attncheck_add_test: NAME and PLUGIN are both required (${form})")
  endif()
  if(NOT TARGET ${arg_PLUGIN})
    message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): PLUGIN ${arg_PLUGIN} is not a target of this project "
                        "(add_library(${arg_PLUGIN} MODULE ...) first)")
  endif()
  if(NOT TARGET attncheck::cli)
    message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): attncheck::cli is not defined; call find_package(attncheck) first")
  endif()
  set(seed_in_args FALSE)
  foreach(a IN LISTS arg_ARGS)
    if(a STREQUAL "--seed" OR a MATCHES "^--seed=")
      set(seed_in_args TRUE)
    endif()
  endforeach()
  set(seed_flag "")
  if(DEFINED arg_SEED)
    if(seed_in_args)
      message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): SEED ${arg_SEED} and a --seed in ARGS: give one of them")
    endif()
    if(arg_SEED MATCHES "^[0-9]+$")
      set(seed_flag --seed ${arg_SEED})
    elseif(NOT arg_SEED STREQUAL "random")
      message(FATAL_ERROR "attncheck_add_test(${arg_NAME}): SEED '${arg_SEED}' is neither a number nor random (${form})")
    endif()
  elseif(NOT seed_in_args)
    set(seed_flag --seed 1)
  endif()
  add_test(NAME ${arg_NAME}
           COMMAND $<TARGET_FILE:attncheck::cli> check --plugin $<TARGET_FILE:${arg_PLUGIN}> ${seed_flag} ${arg_ARGS})
endfunction()
