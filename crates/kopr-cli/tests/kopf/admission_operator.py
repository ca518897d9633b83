"""A Kopf operator with admission handlers, run unchanged against kopr's API server.

Kopf serves the handlers over HTTPS with its own self-signed certificate and
registers them itself (`settings.admission.managed`), as it does on any
cluster. The test that runs it is crates/kopr-cli/tests/kopf_admission.rs.
"""

import os

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    port = int(os.environ["KOPF_WEBHOOK_PORT"])
    settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", host="127.0.0.1", port=port)
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("kopfexamples", id="field-check")
def field_check(spec, warnings, dryrun, **_):
    warnings.append("seen by kopf")
    if not dryrun and spec.get("field") == "wrong":
        raise kopf.AdmissionError("the field may not be 'wrong'")


@kopf.on.validate("kopfexamples", id="teapot", field="spec.field", value="teapot")
def teapot(**_):
    raise kopf.AdmissionError("no teapots here", code=418)


@kopf.on.validate("kopfexamples", id="status-check", subresource="status")
def status_check(status, **_):
    if (status or {}).get("phase") == "Broken":
        raise kopf.AdmissionError("a KopfExample is never Broken")


@kopf.on.mutate("kopfexamples", id="inject", labels={"inject": "yes"})
def inject(patch: kopf.Patch, **_):
    patch.spec["injected"] = 123
