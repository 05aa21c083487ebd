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
