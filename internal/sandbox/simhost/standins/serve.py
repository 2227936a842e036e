#!/usr/bin/env -S python3 -S
# hydra sandbox: the machine's stand-in server. A provisioning calls the Python stand-ins (systemctl,
# nvidia-smi, ...) a few dozen times a machine, and a fleet's machines all run on the one computer
# that simulates them: starting Python for each call was most of what a call cost. This process starts
# Python once, with the stand-ins compiled and the modules they use imported, and runs each call in a
# process forked from it: the stand-in's own code, its arguments, its files, its output and exit status
# are those of a call run on its own.
#
#   serve.py PORTFILE     started by internal/sandbox/simhost with the machine; listens on a free
#                         loopback port and writes it to PORTFILE (run/standins.port)
#
# What a machine's PATH finds under a served stand-in's name (bin/NAME) is a small bash script that
# sends the call here and writes out the answer; the stand-in itself is bin/NAME.py. Without an answer
# from this server (it is not running, or the port is another machine's) the script runs bin/NAME.py
# itself, so nothing depends on this process but the cost of a call.
#
# A call: NUL-terminated fields: the caller's bin directory, the stand-in's name, the number of
# arguments, the arguments. The answer: a line "STATUS STDOUT_BYTES STDERR_BYTES", then stdout and
# stderr; "fallback 0 0" when the call is not this machine's to answer. Stand-ins read no standard
# input (theirs is /dev/null here) and write text.
import marshal  # noqa: F401  (imported once for the stand-ins)
import os
import signal
import socket
import sys
import threading
import traceback

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
import hydrasim  # noqa: E402,F401  (imported once for the stand-ins)
import fnmatch  # noqa: E402,F401
import json  # noqa: E402,F401
import re  # noqa: E402,F401

SELF = ("hydrasim.py", os.path.basename(__file__))
CODE = {}
for n in sorted(os.listdir(HERE)):
    if n.endswith(".py") and n not in SELF:
        path = os.path.join(HERE, n)
        with open(path) as f:
            CODE[n[:-3]] = (path, compile(f.read(), path, "exec"))


def read_call(conn):
    """The call's fields, or None when the caller went away before sending it whole."""
    buf = b""
    fields = []
    while True:
        while b"\0" in buf:
            field, buf = buf.split(b"\0", 1)
            fields.append(os.fsdecode(field))
            if len(fields) >= 3 and len(fields) == 3 + int(fields[2]):
                return fields
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk


def run(name, args):
    """Runs the stand-in as `python3 -S bin/NAME.py ARGS...` would, in this (forked) process, with
    stdout and stderr in memory files; returns its exit status and both outputs."""
    path, code = CODE[name]
    out, err = os.memfd_create("stdout"), os.memfd_create("stderr")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.argv = [os.path.join(HERE, name)] + args
    status = 0
    try:
        exec(code, {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__})
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code & 0xFF
        else:
            sys.stderr.write("%s\n" % e.code)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status, read_all(out), read_all(err)


def read_all(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def end_with_caller(conn):
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass
    os._exit(1)


def answer(conn):
    fields = read_call(conn)
    if fields is None:
        return
    here, name, args = fields[0], fields[1], fields[3:]
    if os.path.realpath(here) != HERE or name not in CODE:
        conn.sendall(b"fallback 0 0\n")
        return
    # The call ends with its caller, as a stand-in run on its own does when its caller kills it (a
    # timeout around an nvidia-smi that hangs): the caller sends nothing more, so the connection
    # reads empty only once the caller is gone.
    threading.Thread(target=end_with_caller, args=(conn,), daemon=True).start()
    status, out, err = run(name, args)
    conn.sendall(b"%d %d %d\n" % (status, len(out), len(err)) + out + err)


def reap(*_):
    """Reaps the calls' processes that have ended (their CPU time counts as this server's children's)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main(portfile):
    signal.signal(signal.SIGCHLD, reap)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    tmp = "%s.%d" % (portfile, os.getpid())
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.replace(tmp, portfile)
    while True:
        conn, _ = srv.accept()
        if os.fork() == 0:
            try:
                srv.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                answer(conn)
            except BaseException:
                pass
            finally:
                os._exit(0)
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
