//! kube 1.32 defaults of core/v1 Endpoints: port protocol `TCP`.

use super::{Obj, items_mut, set_str};

/// `SetDefaults_Endpoints`.
pub(super) fn endpoints(root: &mut Obj) {
    for subset in items_mut(root, "subsets") {
        for port in items_mut(subset, "ports") {
            set_str(port, "protocol", "TCP");
        }
    }
}
