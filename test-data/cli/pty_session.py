#!/usr/bin/env python3
"""Drives an interactive program through a pseudo-terminal, as a person at a terminal:
pty_session.py PROMPT LINES COMMAND ARGS... sends each of LINES (newline-separated) once
the program has printed PROMPT once more and its line editor has taken the terminal out of
canonical mode (libedit discards input typed before that). Prints everything the program
wrote (Python's repr of the bytes) and its exit status, one line each. Used by
server/tests/php_cli.rs for `php -a`."""
import os
import pty
import select
import sys
import termios

prompt = sys.argv[1].encode()
lines = [line.encode() + b"\n" for line in sys.argv[2].split("\n") if line]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])

out = b""
sent = 0


def waiting_for_us():
    return lines and out.count(prompt) > sent


while True:
    ready, _, _ = select.select([fd], [], [], 0.05 if waiting_for_us() else 20)
    if ready:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the program exited and closed the terminal
            break
        if not data:
            break
        out += data
    elif not waiting_for_us():
        os.kill(pid, 9)  # silent for 20 s with nothing left to send: stuck
        break
    if waiting_for_us() and not termios.tcgetattr(fd)[3] & termios.ICANON:
        sent += 1
        os.write(fd, lines.pop(0))
_, status = os.waitpid(pid, 0)
print(repr(out))
print(os.waitstatus_to_exitcode(status))
