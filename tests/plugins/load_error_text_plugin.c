/* A plugin that refuses to load (attncheck_plugin_v1 returns NULL) and says
 * why in attncheck_plugin_load_error with terminal escapes, a bidi override
 * and bytes that are not UTF-8, as a Python import error can: the checker's
 * console must show the reason escaped, never obey it. */
#include <stddef.h>

#include "attncheck/plugin.h"

__attribute__((visibility("default"))) const char *attncheck_plugin_load_error(void) {
  return "import failed\x1b[2J\x1b[H\a moved \xe2\x80\xae gnp. \xc2\x9b" "31m \xff end";
}

const attncheck_impl *attncheck_plugin_v1(void) { return NULL; }
