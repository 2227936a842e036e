#!/usr/bin/env -S python3 -S
# hydra sandbox stand-in for node_exporter and dcgm-exporter: serves /metrics on a loopback port.
#
#   exporter.py node|dcgm PORTFILE GPUS_JSON     started by internal/sandbox/simhost (the image's exporters,
#                                                 run by systemd): any free port, written to PORTFILE
#   exporter.py serve node|dcgm ARGS...          run by the playbooks (bin/prometheus-node-exporter,
#                                                 bin/dcgm-exporter) on a machine without systemd: the
#                                                 port of --web.listen-address= / --address=; the
#                                                 arguments are recorded in run/<kind>-exporter.args
#
# In the sandbox (HYDRA_SANDBOX=1: machines that share the host's network) it only ever binds 127.0.0.1,
# whatever address it is asked for (the address asked is recorded); elsewhere (the real-OS tests' machines,
# whose network may be their own) it binds the address asked, as the real exporters do. It answers 503 while ../faults/exporter_dead names its kind ("node" or "dcgm").
#
# It answers with socketserver and an HTTP/1.0 reply of its own, not http.server: a fleet's machines
# start two exporters each on the one computer that simulates them all, and http.server's imports (the
# email package among them) took two thirds of an exporter's start.
import os
import socketserver
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
if sys.argv[1] == "serve":
    kind, args = sys.argv[2], sys.argv[3:]
    gpus_path = os.path.join(HERE, "gpus.json")
    portfile = None
    listen = None
    for i, a in enumerate(args):
        for flag in ("--web.listen-address", "--address", "-a"):
            if a == flag and i + 1 < len(args):
                listen = args[i + 1]
            elif a.startswith(flag + "="):
                listen = a.split("=", 1)[1]
    if not listen or ":" not in listen:
        sys.exit("hydra stand-in %s exporter: no listen address among %r" % (kind, args))
    port = int(listen.rsplit(":", 1)[1])
    os.makedirs(os.path.join(HERE, "run"), exist_ok=True)
    with open(os.path.join(HERE, "run", kind + "-exporter.args"), "w") as f:
        f.write(" ".join(args) + "\n")
else:
    kind, portfile, gpus_path = sys.argv[1], sys.argv[2], sys.argv[3]
    port, listen = 0, None
FAULT = os.path.join(os.path.dirname(gpus_path), "faults", "exporter_dead")


def dead():
    try:
        with open(FAULT) as f:
            return kind in f.read().split()
    except OSError:
        return False


def metrics():
    if kind == "node":
        return ('# HELP node_exporter_build_info hydra sandbox stand-in\n'
                'node_exporter_build_info{version="1.8.2"} 1\nnode_load1 0.01\n')
    import json
    with open(gpus_path) as f:
        cfg = json.load(f)
    out = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for n, g in enumerate(cfg["gpus"]):
        out.append('DCGM_FI_DEV_GPU_TEMP{gpu="%d",UUID="%s",modelName="%s"} 34' % (n, g["uuid"], g["name"]))
    for n, g in enumerate(cfg["gpus"]):
        out.append('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="%d",UUID="%s"} %d' % (n, g["uuid"], g.get("ecc_uncorrected", 0)))
    return "\n".join(out) + "\n"


class Handler(socketserver.StreamRequestHandler):
    """One request (its line and headers read), one HTTP/1.0 reply, and the connection closed."""

    def handle(self):
        words = self.rfile.readline(65537).decode("latin-1").split()
        while self.rfile.readline(65537).strip():
            pass  # the request's headers: nothing in them changes the answer
        if len(words) < 2 or words[0] not in ("GET", "HEAD"):
            self.reply(400, "Bad Request", "bad request\n")
        elif words[1].split("?")[0] != "/metrics":
            self.reply(404, "Not Found", "not found\n")
        elif dead():
            self.reply(503, "Service Unavailable", "exporter dead (hydra sandbox fault)\n")
        else:
            self.reply(200, "OK", metrics(), words[0] == "HEAD")

    def reply(self, code, reason, text, head_only=False):
        body = text.encode()
        self.wfile.write(("HTTP/1.0 %d %s\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %d\r\n\r\n"
                          % (code, reason, len(body))).encode("latin-1") + (b"" if head_only else body))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


host = "127.0.0.1"
if listen and os.environ.get("HYDRA_SANDBOX") != "1":
    host = listen.rsplit(":", 1)[0].strip("[]") or "0.0.0.0"
srv = Server((host, port), Handler)
if portfile:
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, portfile)
srv.serve_forever()
