# Issue #30, earned verdicts: plugins that give a law nothing to judge (every
# call aborts; every call refused; a declared feature refused on every call),
# built like the other misbehaving test plugins. Their scenarios:
# tests/cli/verdict_cli.py.
foreach(name IN ITEMS abort refuse_all)
  attncheck_test_plugin(attncheck_test_${name}_plugin ${name}_plugin ${name}_plugin.c 11 NONE)
endforeach()
# Wraps the v2 example (C99, as its own build), so it takes the example's standard.
attncheck_test_plugin(attncheck_test_refuse_softcap_plugin refuse_softcap_plugin refuse_softcap_plugin.c 99 NONE)
