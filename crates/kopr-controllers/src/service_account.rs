//! Keeps a `default` ServiceAccount in every active namespace.

use crate::object;
use crate::registry::Api;
use crate::storage::{EventType, WatchEvent};

/// Reacts to namespace creation and to deletion of a `default` ServiceAccount.
pub fn observe(api: &Api, ev: &WatchEvent) {
    let namespace = if ev.key.starts_with("/core/namespaces/") && ev.event_type == EventType::Added
    {
        object::name(&ev.object).to_string()
    } else if ev.key.starts_with("/core/serviceaccounts/")
        && ev.event_type == EventType::Deleted
        && object::name(&ev.object) == "default"
    {
        object::namespace(&ev.object).to_string()
    } else {
        return;
    };
    let api = api.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::bootstrap::ensure_default_service_account(&api, &namespace).await {
            tracing::warn!(namespace, error = %e, "could not create the default service account");
        }
    });
}
