/* Correct on f32 and f64, but every text it hands the checker is hostile
 * (issue #30, "untrusted text stays text"):
 *   - its name holds Markdown and HTML ("|", "<img ...>", "*", "`"), a bidi
 *     override (U+202E), a terminal escape and U+FFFF;
 *   - every f16/bf16 call (or every call, built with HOSTILE_TEXT_FAIL) fails
 *     with an err text holding what XML 1.0 forbids or what is not UTF-8:
 *     U+FFFE, U+FFFF, C0 controls, a lone surrogate (ED A0 80), an overlong
 *     form (C0 AF), the bytes F5, F6 and F7, a code point past U+10FFFF
 *     (F4 90 80 80), a cut sequence (E2 82), plus a bidi override and a
 *     terminal escape.
 * Every report must stay well-formed and every console line clean. */
#include "test_attention.h"

#define HOSTILE_BYTES                                                                                   \
  "U+FFFE \xef\xbf\xbe U+FFFF \xef\xbf\xbf C0 \x01\x02\x0b\x0c\x1f surrogate \xed\xa0\x80 overlong " \
  "\xc0\xaf F5-F7 \xf5\xf6\xf7 big \xf4\x90\x80\x80 cut \xe2\x82 bidi \xe2\x80\xae gnp. escape "       \
  "\x1b[2J\x1b]0;title\x07 html <b>|</b> end"

static int hostile_forward(const attncheck_call *c, char *err, size_t err_len) {
#ifdef HOSTILE_TEXT_FAIL
  (void)test_attention(c, err, err_len); /* (computed, then refused) */
  snprintf(err, err_len, "%s", HOSTILE_BYTES);
  return 7; /* an error: the call fails, with this text */
#else
  const int rc = test_attention(c, err, err_len);
  if (rc == ATTNCHECK_UNSUPPORTED) snprintf(err, err_len, "%s", HOSTILE_BYTES);
  return rc;
#endif
}

const attncheck_impl *attncheck_plugin_v1(void) {
  static const attncheck_impl impl = {
      ATTNCHECK_ABI_VERSION, "hostile|<img src=x onerror=alert(1)>*`\xe2\x80\xae\x1b[31m\xef\xbf\xbf_plugin",
      hostile_forward};
  return &impl;
}
