#!/usr/bin/env python3
# hydra sandbox stand-in for node_exporter and dcgm-exporter: serves /metrics on a loopback port.
# usage: exporter.py node|dcgm PORTFILE GPUS_JSON
import http.server, json, os, sys

kind, portfile, gpus_path = sys.argv[1], sys.argv[2], sys.argv[3]


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
        body = metrics().encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
tmp = portfile + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.replace(tmp, portfile)
srv.serve_forever()
