"""Runs a program with stdout and stderr on a pseudo-terminal, as a user's
terminal would hold them (what a progress line and colour are decided on).
Shared by ci_reports.py (attncheck's progress line and colour) and
overnight_cli.py (fuzz/overnight.sh's progress line)."""
import os
import pty
import select


def run_on_pty(path, argv, env, idle_seconds=60):
    """Executes `path` with `argv` and `env` on a new pseudo-terminal; returns
    (exit code, everything it wrote, decoded). Stops reading once nothing came
    for `idle_seconds`."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(path, argv, env)
    chunks = []
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
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def run_on_pty_timed(path, argv, env, columns=200, idle_seconds=120, on_output=None):
    """As run_on_pty, on a terminal `columns` wide, recording when each piece
    of output came: returns (exit code, [(seconds since the start, text)]).
    `on_output(pieces, write)` is called after each read; write(bytes) types on
    the terminal (b"\\x03" is Ctrl-C: SIGINT to its foreground process group)."""
    import fcntl
    import struct
    import termios
    import time
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        os.execve(path, argv, env)
    start = time.monotonic()
    pieces = []
    while True:
        r, _, _ = select.select([fd], [], [], idle_seconds)
        if not r:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        pieces.append((time.monotonic() - start, data.decode(errors="replace")))
        if on_output:
            on_output(pieces, lambda b: os.write(fd, b))
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), pieces
