//! `storage.k8s.io`: StorageClasses, CSI drivers and nodes, capacities and attachments.

use k8s_openapi::api::storage;

use super::plain;
use crate::resources::kind::{KindDef, Scope, Sub};
use crate::typed::decode_as;

/// The kinds of `storage.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        Scope::Cluster,
    )
    .stored(plain, decode_as::<storage::v1::CSIDriver>),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        Scope::Cluster,
    )
    .stored(plain, decode_as::<storage::v1::CSINode>),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        Scope::Namespaced,
    )
    .stored(plain, decode_as::<storage::v1::CSIStorageCapacity>),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        Scope::Cluster,
    )
    .short(&["sc"])
    .stored(plain, decode_as::<storage::v1::StorageClass>),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        Scope::Cluster,
    )
    .subresources(&[Sub::Status])
    .stored(plain, decode_as::<storage::v1::VolumeAttachment>),
];
