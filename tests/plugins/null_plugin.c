/* attncheck_plugin_v1 exists but returns NULL. */
#include "attncheck/plugin.h"

const attncheck_impl *attncheck_plugin_v1(void) { return NULL; }
