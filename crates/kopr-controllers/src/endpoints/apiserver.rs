//! The Endpoints and EndpointSlice `kubernetes` in `default`, which the API
//! server writes for itself (kube-apiserver's endpoint reconciler): one
//! address, the server's own (for a server listening on every address, the
//! host's outbound address, as kube's default advertise address), and the
//! port it listens on, named `https`. The Endpoints carry
//! `endpointslice.kubernetes.io/skip-mirror: "true"`, the slice
//! `kubernetes.io/service-name: kubernetes` (and no managed-by label);
//! other slices with that label are deleted. They are rewritten whenever
//! they change or go. Endpoints validation refuses loopback addresses, so
//! for a server listening on loopback the two objects are written to
//! storage directly, without validation.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::object;
use crate::podutil;
use crate::registry::{Api, DeleteOptions, Target};
use crate::resources::ResourceType;
use crate::status::ApiError;
use crate::storage::{EventType, WatchEvent, WriteOutcome};

/// The field manager of the server's own writes.
const MANAGER: &str = "kube-apiserver";
const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";
const ENDPOINTS_KEY: &str = "/core/endpoints/default/kubernetes";
const SLICES_PREFIX: &str = "/discovery.k8s.io/endpointslices/default/";
const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
const SERVICE_NAME: &str = "kubernetes.io/service-name";

/// The address the server advertises for a listen address: itself, or for
/// an unspecified one the host's outbound address (loopback if none).
pub fn advertised(listen: SocketAddr) -> SocketAddr {
    let ip = listen.ip();
    if !ip.is_unspecified() {
        return listen;
    }
    let probe = |bind: &str, peer: &str| -> Option<IpAddr> {
        let socket = UdpSocket::bind(bind).ok()?;
        // Connecting a UDP socket sends nothing; it picks the route.
        socket.connect(peer).ok()?;
        Some(socket.local_addr().ok()?.ip()).filter(|ip| !ip.is_unspecified())
    };
    let found = match ip {
        IpAddr::V4(_) => probe("0.0.0.0:0", "192.0.2.1:9"),
        IpAddr::V6(_) => probe("[::]:0", "[2001:db8::1]:9"),
    };
    let loopback = match ip {
        IpAddr::V4(_) => IpAddr::from([127, 0, 0, 1]),
        IpAddr::V6(_) => IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
    };
    SocketAddr::new(found.unwrap_or(loopback), listen.port())
}

/// Addresses Endpoints validation refuses (`ValidateNonSpecialIP`).
fn refused(ip: IpAddr) -> bool {
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local() || v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            first & 0xffc0 == 0xfe80 || first & 0xff0f == 0xff02
        }
    };
    ip.is_loopback() || ip.is_unspecified() || link_local
}

fn ports(port: u16) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// The Endpoints `kubernetes`, from the stored one if any.
fn endpoints(current: Option<&Value>, at: SocketAddr) -> Value {
    let mut ep = current.cloned().unwrap_or_else(|| {
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": NAME, "namespace": NAMESPACE}})
    });
    ep["metadata"]["labels"] = json!({SKIP_MIRROR: "true"});
    ep["subsets"] =
        json!([{"addresses": [{"ip": at.ip().to_string()}], "ports": ports(at.port())}]);
    ep
}

fn address_type(ip: IpAddr) -> &'static str {
    if ip.is_ipv4() { "IPv4" } else { "IPv6" }
}

/// The EndpointSlice `kubernetes`, from the stored one if any.
fn slice(current: Option<&Value>, at: SocketAddr) -> Value {
    let mut s = current.cloned().unwrap_or_else(|| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE}})
    });
    s["metadata"]["labels"] = json!({SERVICE_NAME: NAME});
    s["addressType"] = json!(address_type(at.ip()));
    s["endpoints"] = json!([{"addresses": [at.ip().to_string()], "conditions": {"ready": true}}]);
    s["ports"] = ports(at.port());
    s
}

/// The parts of an object the reconciler owns, as the API encodes them.
fn owned_parts(obj: &Value, is_slice: bool) -> Value {
    type Endpoints = k8s_openapi::api::core::v1::Endpoints;
    type Slice = k8s_openapi::api::discovery::v1::EndpointSlice;
    let labels = object::labels(obj).cloned().unwrap_or_default();
    if !is_slice {
        let subsets = json!({"metadata": {}, "subsets": obj.get("subsets")});
        json!([labels, podutil::normalized::<Endpoints>(&subsets)])
    } else {
        let parts = json!({"metadata": {}, "addressType": obj.get("addressType"),
            "endpoints": obj.get("endpoints"), "ports": obj.get("ports")});
        json!([labels, podutil::normalized::<Slice>(&parts)])
    }
}

/// Writes `want` (built from the stored object by `build`) unless the
/// stored object already agrees.
async fn put(
    api: &Api,
    rt: &Arc<ResourceType>,
    key: &str,
    build: impl Fn(Option<&Value>) -> Value,
    direct: bool,
) -> Result<(), ApiError> {
    let is_slice = rt.kind == "EndpointSlice";
    let stored = api.store.current(key);
    let current = stored.as_ref().map(|s| s.object.as_ref());
    let want = build(current);
    if let Some(cur) = current
        && owned_parts(cur, is_slice) == owned_parts(&want, is_slice)
    {
        return Ok(());
    }
    let opts = podutil::writer(MANAGER);
    if !direct {
        let t = Target {
            rt: rt.clone(),
            namespace: Some(NAMESPACE.into()),
            name: Some(NAME.into()),
        };
        let written = match current {
            None => api.create(rt, Some(NAMESPACE), want, &opts).await,
            Some(_) => api.mutate(&t, &opts, |cur| Ok(build(Some(cur)))).await,
        };
        return match written {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        };
    }
    // Straight to storage, as the API would store it.
    let mut obj = want;
    // A write that finds the key taken or changed meanwhile is dropped: the
    // other writer's event brings the reconciler back.
    let _: WriteOutcome = match &stored {
        None => {
            if let Some(meta) = object::meta_mut(&mut obj) {
                meta.insert("uid".into(), json!(object::new_uid()));
                meta.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
                if is_slice {
                    meta.insert("generation".into(), json!(1));
                }
            }
            crate::registry::patching::record_update(rt, None, &mut obj, MANAGER, None);
            let obj = crate::registry::convert::to_storage(rt, obj, &rt.storage_api_version);
            api.store.create(key, obj).await?
        }
        Some(s) => {
            if is_slice && let Some(meta) = object::meta_mut(&mut obj) {
                meta.insert(
                    "generation".into(),
                    json!(object::generation(&s.object) + 1),
                );
            }
            crate::registry::patching::record_update(rt, Some(&s.object), &mut obj, MANAGER, None);
            let obj = crate::registry::convert::to_storage(rt, obj, &rt.storage_api_version);
            api.store
                .update(key, obj, s.revision, s.object.clone())
                .await?
        }
    };
    Ok(())
}

/// Writes the Endpoints and EndpointSlice `kubernetes` for a server
/// reachable at `at`, and deletes other slices of the Service.
pub async fn reconcile(api: &Api, at: SocketAddr) -> Result<(), ApiError> {
    let direct = refused(at.ip());
    if let Some(rt) = api.catalog.get("", "v1", "endpoints") {
        put(api, &rt, ENDPOINTS_KEY, |cur| endpoints(cur, at), direct).await?;
    }
    let Some(rt) = api.catalog.get("discovery.k8s.io", "v1", "endpointslices") else {
        return Ok(());
    };
    for other in api.store.current_objects(SLICES_PREFIX) {
        let ours = object::labels(&other)
            .and_then(|l| l.get(SERVICE_NAME))
            .and_then(Value::as_str)
            == Some(NAME);
        let primary = object::name(&other) == NAME
            && other.get("addressType").and_then(Value::as_str) == Some(address_type(at.ip()));
        if ours && !primary {
            let t = Target {
                rt: rt.clone(),
                namespace: Some(NAMESPACE.into()),
                name: Some(object::name(&other).to_string()),
            };
            match api.delete(&t, &DeleteOptions::default()).await {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    let key = format!("{SLICES_PREFIX}{NAME}");
    put(api, &rt, &key, |cur| slice(cur, at), direct).await
}

fn concerns(ev: &WatchEvent) -> bool {
    if ev.key == ENDPOINTS_KEY {
        return true;
    }
    if !ev.key.starts_with(SLICES_PREFIX) {
        return false;
    }
    let labelled = |o: &Value| {
        object::labels(o)
            .and_then(|l| l.get(SERVICE_NAME))
            .and_then(Value::as_str)
            == Some(NAME)
    };
    ev.key.ends_with("/kubernetes") || (ev.event_type != EventType::Deleted && labelled(&ev.object))
}

/// Writes the two objects for a server listening on `listen`, then keeps
/// them current until `stop` is cancelled.
pub async fn start(api: Api, listen: SocketAddr, stop: CancellationToken) {
    let at = advertised(listen);
    let mut events = api.store.subscribe();
    let sync = move |api: Api| async move {
        if let Err(e) = reconcile(&api, at).await {
            tracing::warn!(error = %e, "writing the kubernetes Service's endpoints failed");
        }
    };
    sync(api.clone()).await;
    tokio::spawn(async move {
        loop {
            let received = tokio::select! {
                _ = stop.cancelled() => return,
                r = events.recv() => r,
            };
            match received {
                Ok(ev) if concerns(&ev) => sync(api.clone()).await,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => sync(api.clone()).await,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_link_local_addresses_are_refused() {
        for ip in ["127.0.0.1", "::1", "0.0.0.0", "169.254.1.1", "fe80::1"] {
            assert!(refused(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "192.168.1.2", "2001:db8::1"] {
            assert!(!refused(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn a_specific_listen_address_is_advertised_as_is() {
        let a: SocketAddr = "10.1.2.3:6443".parse().unwrap();
        assert_eq!(advertised(a), a);
        let any: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        let got = advertised(any);
        assert_eq!(got.port(), 6443);
        assert!(!got.ip().is_unspecified());
    }

    #[test]
    fn the_objects_point_at_the_server() {
        let at: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        let ep = endpoints(None, at);
        assert_eq!(ep["metadata"]["labels"], json!({SKIP_MIRROR: "true"}));
        assert_eq!(
            ep["subsets"],
            json!([{"addresses": [{"ip": "127.0.0.1"}],
                "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}])
        );
        let s = slice(None, at);
        assert_eq!(s["addressType"], "IPv4");
        assert_eq!(s["endpoints"][0]["conditions"], json!({"ready": true}));
        assert_eq!(
            owned_parts(&s, true),
            owned_parts(&slice(Some(&s), at), true)
        );
        let moved: SocketAddr = "127.0.0.1:7443".parse().unwrap();
        assert_ne!(
            owned_parts(&s, true),
            owned_parts(&slice(Some(&s), moved), true)
        );
    }
}
