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
import http.server
import json
import os
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
    with open(gpus_path) as f:
        cfg = json.load(f)
    out = ["# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).", "# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for n, g in enumerate(cfg["gpus"]):
        out.append('DCGM_FI_DEV_GPU_TEMP{gpu="%d",UUID="%s",modelName="%s"} 34' % (n, g["uuid"], g["name"]))
    for n, g in enumerate(cfg["gpus"]):
        out.append('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="%d",UUID="%s"} %d' % (n, g["uuid"], g.get("ecc_uncorrected", 0)))
    return "\n".join(out) + "\n"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        if dead():
            self.send_error(503, "exporter dead (hydra sandbox fault)")
            return
        body = metrics().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


host = "127.0.0.1"
if listen and os.environ.get("HYDRA_SANDBOX") != "1":
    host = listen.rsplit(":", 1)[0].strip("[]") or "0.0.0.0"
srv = http.server.ThreadingHTTPServer((host, port), Handler)
if portfile:
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, portfile)
srv.serve_forever()
