# hydra health check: every exporter answers /metrics (with the text each must hold). Retries for up to
# a minute, for exporters that were just (re)started. Arguments: name port required-text ...
import sys
import time
import urllib.request

checks = [sys.argv[i:i + 3] for i in range(1, len(sys.argv), 3)]
deadline = time.time() + 60
failed = {}
while True:
    failed = {}
    for name, port, need in checks:
        url = "http://127.0.0.1:%s/metrics" % port
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                body = r.read().decode("utf-8", "replace")
            if need and need not in body:
                failed[name] = "%s answers without %s" % (url, need)
        except Exception as e:
            failed[name] = "%s does not answer: %s" % (url, e)
    if not failed or time.time() > deadline:
        break
    time.sleep(3)
for name, port, _ in checks:
    print("%s on port %s: %s" % (name, port, failed.get(name, "ok")))
if failed:
    sys.stderr.write("; ".join("%s: %s" % kv for kv in sorted(failed.items())) + "\n")
    sys.exit(1)
