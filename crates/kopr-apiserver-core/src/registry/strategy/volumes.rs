//! The strategies of core v1 PersistentVolumes and PersistentVolumeClaims:
//! a new volume or claim starts `Pending` (a volume with the time of that
//! phase), and a volume's phase changes stamp `lastPhaseTransitionTime`,
//! as kube's strategies do.

use serde_json::{Map, Value, json};

use super::Strategy;
use crate::object;

/// PersistentVolumes (`VOLUME`) and PersistentVolumeClaims (`CLAIM`).
#[derive(Debug, Clone, Copy)]
pub struct VolumeStrategy {
    /// Whether phases carry their transition time (volumes).
    stamps_phase: bool,
}

impl VolumeStrategy {
    /// PersistentVolumes.
    pub const VOLUME: VolumeStrategy = VolumeStrategy { stamps_phase: true };
    /// PersistentVolumeClaims.
    pub const CLAIM: VolumeStrategy = VolumeStrategy {
        stamps_phase: false,
    };
}

impl Strategy for VolumeStrategy {
    builtin_admission!();

    fn prepare_for_create(&self, map: &mut Map<String, Value>) {
        let mut status = json!({"phase": "Pending"});
        if self.stamps_phase {
            status["lastPhaseTransitionTime"] = json!(object::now_rfc3339());
        }
        map.insert("status".into(), status);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, subresource: Option<&str>) -> bool {
        if self.stamps_phase && subresource == Some("status") {
            let phase = |v: &Value| v.pointer("/status/phase").cloned();
            if phase(new) != phase(old)
                && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
            {
                status.insert(
                    "lastPhaseTransitionTime".into(),
                    json!(object::now_rfc3339()),
                );
            }
        }
        false
    }
}
