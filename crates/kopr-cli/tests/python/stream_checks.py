"""Exec and port-forward through the unmodified Python `kubernetes` client
(WebSocket `v4.channel.k8s.io`) against kopr apiserver.

Usage: python stream_checks.py KUBECONFIG POD
The pod runs in namespace default and declares container port 80.
"""

import sys
import time

from kubernetes import client, config
from kubernetes.stream import portforward, stream


def recv_until(sock, predicate, timeout=10):
    data = b""
    deadline = time.time() + timeout
    while not predicate(data):
        assert time.time() < deadline, data
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk
    return data


def main(kubeconfig, pod):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    exec_ = core.connect_get_namespaced_pod_exec
    checks = 0

    out = stream(exec_, pod, "default", command=["echo", "hi"], stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "hi\n", repr(out)
    checks += 1

    resp = stream(exec_, pod, "default", command=["sh", "-c", "echo out; echo err >&2; exit 3"],
                  stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    resp.run_forever(timeout=10)
    assert resp.read_stdout() == "out\n"
    assert resp.read_stderr() == "err\n"
    assert resp.returncode == 3, resp.returncode
    checks += 1

    resp = stream(exec_, pod, "default", command=["cat"], stderr=True, stdin=True, stdout=True, tty=False,
                  _preload_content=False)
    resp.write_stdin("line one\n")
    assert resp.readline_stdout(timeout=10) == "line one"
    resp.close()
    checks += 1

    pf = portforward(core.connect_get_namespaced_pod_portforward, pod, "default", ports="80")
    sock = pf.socket(80)
    sock.setblocking(True)
    sock.sendall(b"hello")
    assert recv_until(sock, lambda d: len(d) >= 5) == b"hello"
    sock.close()
    checks += 1

    pf = portforward(core.connect_get_namespaced_pod_portforward, pod, "default", ports="80")
    sock = pf.socket(80)
    sock.setblocking(True)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
    answer = recv_until(sock, lambda d: d.endswith(b"ok"))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    sock.close()
    checks += 1

    print(f"python streams: {checks} checks passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
