/* A shared library without attncheck_plugin_v1: only a look-alike name. */
int attncheck_plugin_v0(void) { return 0; }
