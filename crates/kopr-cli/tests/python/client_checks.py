"""Checks the unmodified Python `kubernetes` client against kopr apiserver.

Usage: python client_checks.py KUBECONFIG
Exits non-zero on the first failed check.
"""

import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    apps = client.AppsV1Api()
    checks = 0

    names = [ns.metadata.name for ns in core.list_namespace().items]
    assert "kube-system" in names, names
    checks += 1

    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py", labels={"from": "python"}), data={"a": "1"})
    created = core.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.metadata.resource_version
    checks += 1

    patched = core.patch_namespaced_config_map("py", "default", {"data": {"b": "2"}})
    assert patched.data == {"a": "1", "b": "2"}, patched.data
    checks += 1

    stale = created
    stale.data = {"c": "3"}
    try:
        core.replace_namespaced_config_map("py", "default", stale)
        raise AssertionError("a stale replace must fail")
    except ApiException as e:
        assert e.status == 409, e.status
        assert "the object has been modified" in e.body, e.body
    checks += 1

    listed = core.list_namespaced_config_map("default", label_selector="from=python")
    assert [c.metadata.name for c in listed.items] == ["py"]
    checks += 1

    try:
        core.read_namespaced_config_map("missing", "default")
        raise AssertionError("reading a missing object must fail")
    except ApiException as e:
        assert e.status == 404 and 'configmaps \\"missing\\" not found' in e.body, e.body
    checks += 1

    # Watch: changes made after the watch starts arrive in order.
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    seen = []

    def changes():
        time.sleep(0.3)
        core.patch_namespaced_config_map("py", "default", {"data": {"d": "4"}})
        core.delete_namespaced_config_map("py", "default")

    threading.Thread(target=changes).start()
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 2:
            w.stop()
    assert seen == [("MODIFIED", "py"), ("DELETED", "py")], seen
    checks += 1

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "py-web"},
        "spec": {
            "selector": {"matchLabels": {"app": "py-web"}},
            "template": {"metadata": {"labels": {"app": "py-web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    }
    d = apps.create_namespaced_deployment("default", deployment)
    assert d.spec.replicas == 1 and d.metadata.generation == 1
    scale = apps.patch_namespaced_deployment_scale("py-web", "default", {"spec": {"replicas": 3}})
    assert scale.spec.replicas == 3
    checks += 1

    print(f"python client: {checks} checks passed")


if __name__ == "__main__":
    main(sys.argv[1])
