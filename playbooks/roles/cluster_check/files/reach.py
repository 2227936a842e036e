# hydra cluster check: reach every peer of this node at once (argv[1]: the peers as JSON, a list of
# {index, private_ip, ssh_port}; argv[2]: the timeout in seconds). Each peer is tried as Ansible's
# wait_for tries a port (a TCP connection, again every second) until it answers or the timeout ends.
# Prints, as a JSON list in the peers' order, those that never answered: "<address>:<port> (node <index>)".
import json
import socket
import sys
import threading
import time

peers = json.loads(sys.argv[1])
deadline = time.monotonic() + float(sys.argv[2])
answered = [False] * len(peers)


def reach(i, peer):
    while True:
        try:
            socket.create_connection((peer["private_ip"], int(peer["ssh_port"])),
                                     timeout=max(min(deadline - time.monotonic(), 5), 0.1)).close()
            answered[i] = True
            return
        except OSError:
            if time.monotonic() + 1 >= deadline:
                return
            time.sleep(1)


threads = [threading.Thread(target=reach, args=(i, p)) for i, p in enumerate(peers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(["%s:%s (node %s)" % (p["private_ip"], p["ssh_port"], p["index"])
                  for i, p in enumerate(peers) if not answered[i]]))
