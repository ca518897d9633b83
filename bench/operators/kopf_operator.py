"""The Kopf side of `kopr-bench compare-operators`.

One handler, ``result``, for creation and update of BenchItems, with Kopf's
default settings. It writes f(spec) to an adopted ConfigMap child through the
``kubernetes`` client and returns it, so Kopf stores it in ``status.result``.
Mirrors bench/src/workload.rs and bench/src/bin/kopr-operator.rs.

Run as ``kopf run --standalone -A bench/operators/kopf_operator.py`` with
KUBECONFIG pointing at the cluster.
"""

import kopf
import kubernetes

GROUP = "bench.kopr.dev"
VERSION = "v1"
PLURAL = "benchitems"
RESULT_KEY = "result"

core_v1 = None


def result_of(value):
    return str(value * 2)


@kopf.on.startup()
def connect(**_):
    global core_v1
    kubernetes.config.load_kube_config()
    core_v1 = kubernetes.client.CoreV1Api()


# A plain function: the kubernetes client blocks, so Kopf runs it in its
# thread pool (see Kopf's "Async/Await" documentation).
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def result(spec, name, namespace, body, reason, **_):
    value = result_of(spec["value"])
    if reason == kopf.Reason.CREATE:
        child = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {RESULT_KEY: value},
        }
        kopf.adopt(child, owner=body)
        try:
            core_v1.create_namespaced_config_map(namespace, child)
            return value
        except kubernetes.client.ApiException as error:
            # Left by an interrupted attempt: bring it up to date below.
            if error.status != 409:
                raise
    core_v1.patch_namespaced_config_map(name, namespace, {"data": {RESULT_KEY: value}})
    return value
