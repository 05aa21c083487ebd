# Issue #30, untrusted text: plugins whose texts (name, err, load error) hold
# markup, terminal escapes, bidi overrides, U+FFFE/U+FFFF and bytes that are
# not UTF-8 (tests/cli/text_cli.py runs them).
attncheck_test_plugin(attncheck_test_hostile_text_plugin hostile_text_plugin hostile_text_plugin.c 11 NONE)
attncheck_test_plugin(attncheck_test_hostile_text_fail_plugin hostile_text_fail_plugin hostile_text_plugin.c 11
                      HOSTILE_TEXT_FAIL)
attncheck_test_plugin(attncheck_test_load_error_text_plugin load_error_text_plugin load_error_text_plugin.c 11 NONE)
