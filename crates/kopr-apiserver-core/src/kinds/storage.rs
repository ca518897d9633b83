//! `storage.k8s.io`: StorageClasses, CSI drivers and nodes, capacities and attachments.

use k8s_openapi::api::storage;

use super::plain;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `storage.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "CSIDriver",
        Scope::Cluster,
    )
    .stored(plain, decode_as::<storage::v1::CSIDriver>)
    .schema(schema_of::<storage::v1::CSIDriver>)
    .validate(validation::kinds::csi::csi_driver)
    .default(defaults::by_kind::csi_driver)
    .printer(Printer::CsiDriver),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "CSINode",
        Scope::Cluster,
    )
    .stored(plain, decode_as::<storage::v1::CSINode>)
    .schema(schema_of::<storage::v1::CSINode>)
    .validate(validation::kinds::csi::csi_node)
    .printer(Printer::CsiNode),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "CSIStorageCapacity",
        Scope::Namespaced,
    )
    .stored(plain, decode_as::<storage::v1::CSIStorageCapacity>)
    .schema(schema_of::<storage::v1::CSIStorageCapacity>)
    .validate(validation::kinds::storage::csi_storage_capacity)
    .printer(Printer::CsiStorageCapacity),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "StorageClass",
        Scope::Cluster,
    )
    .short(&["sc"])
    .stored(plain, decode_as::<storage::v1::StorageClass>)
    .schema(schema_of::<storage::v1::StorageClass>)
    .validate(validation::kinds::storage::storage_class)
    .default(defaults::by_kind::storage_class)
    .printer(Printer::StorageClass),
    KindDef::new(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "VolumeAttachment",
        Scope::Cluster,
    )
    .subresources(&[Sub::Status])
    .stored(plain, decode_as::<storage::v1::VolumeAttachment>)
    .schema(schema_of::<storage::v1::VolumeAttachment>)
    .validate(validation::kinds::storage::volume_attachment)
    .printer(Printer::VolumeAttachment),
];
