"""A module whose import fails with a message that holds terminal escapes and
a bidi override, as any Python import error may (tests/cli/text_cli.py): the
checker's console must show the reason escaped."""
raise ImportError("no module \x1b[2J\x1b[31mred\x07 \u202egnp.exe \x9b31m end")


def attention(q, k, v, **kw):
    return q
