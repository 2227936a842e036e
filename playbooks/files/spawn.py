# hydra: run a program as a background process on a machine without systemd (a container): detached
# in its own session, output to LOGFILE, its pid in PIDFILE. Does nothing while the process of PIDFILE
# still runs. Prints "started" or "running". With --env-file, the program's environment also gets the
# NAME=VALUE lines of ENVFILE (a value in double quotes is read as a JSON string), as systemd's
# EnvironmentFile= would give it: what may be secret stays off every command line.
#
#   spawn.py [--env-file ENVFILE] PIDFILE LOGFILE PROGRAM [ARG...]
import json
import os
import sys
import time

args = sys.argv[1:]
env = dict(os.environ)
if args[:1] == ["--env-file"]:
    with open(args[1]) as f:
        for line in f:
            name, eq, value = line.strip().partition("=")
            if not eq or name.startswith("#"):
                continue
            env[name] = json.loads(value) if value.startswith('"') else value
    args = args[2:]
pidfile, logfile, argv = args[0], args[1], args[2:]


def running():
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


if running():
    print("running")
    sys.exit(0)
for d in (os.path.dirname(pidfile), os.path.dirname(logfile)):
    os.makedirs(d, mode=0o750, exist_ok=True)
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    with open(pidfile + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.replace(pidfile + ".tmp", pidfile)
    fd = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.write(w, b"ok")
    os.close(w)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        os.write(2, ("spawn.py: %s: %s\n" % (argv[0], e.strerror)).encode())
        os._exit(127)
os.close(w)
os.read(r, 2)
os.close(r)
time.sleep(0.5)
if not running():
    sys.exit("%s exited at once; see %s" % (argv[0], logfile))
print("started")
