"""Runs a program with stdout and stderr on a pseudo-terminal, as a user's
terminal would hold them (what a progress line and colour are decided on).
Shared by ci_reports.py (attncheck's progress line and colour),
overnight_cli.py (fuzz/overnight.sh's progress line) and terminal_run_cli.py
(the live progress line and Ctrl-C, with the time each piece came)."""
import fcntl
import os
import pty
import select
import struct
import termios
import time


def _session(path, argv, env, columns, idle_seconds, on_output):
    """The one loop: executes `path` on a new pseudo-terminal (`columns` wide
    when given), reads until nothing came for `idle_seconds` or the terminal
    closes; returns (exit code, [(seconds since the start, bytes)])."""
    pid, fd = pty.fork()
    if pid == 0:
        if columns:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        os.execve(path, argv, env)
    start = time.monotonic()
    raw, decoded = [], []
    while True:
        r, _, _ = select.select([fd], [], [], idle_seconds)
        if not r:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not data:
            break
        t = time.monotonic() - start
        raw.append((t, data))
        if on_output:
            decoded.append((t, data.decode(errors="replace")))
            on_output(decoded, lambda b: os.write(fd, b))
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), raw


def run_on_pty(path, argv, env, idle_seconds=60):
    """Executes `path` with `argv` and `env` on a new pseudo-terminal; returns
    (exit code, everything it wrote, decoded). Stops reading once nothing came
    for `idle_seconds`."""
    code, raw = _session(path, argv, env, None, idle_seconds, None)
    return code, b"".join(data for _, data in raw).decode(errors="replace")


def run_on_pty_timed(path, argv, env, columns=200, idle_seconds=120, on_output=None):
    """As run_on_pty, on a terminal `columns` wide, recording when each piece
    of output came: returns (exit code, [(seconds since the start, text)]).
    `on_output(pieces, write)` is called after each read; write(bytes) types on
    the terminal (b"\\x03" is Ctrl-C: SIGINT to its foreground process group)."""
    code, raw = _session(path, argv, env, columns, idle_seconds, on_output)
    return code, [(t, data.decode(errors="replace")) for t, data in raw]
