//! `events.k8s.io`: Events, stored as core Events.

use std::sync::Arc;

use k8s_openapi::api::events;

use crate::registry::strategy::EventStrategy;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::selectors;
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `events.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] =
    &[
        KindDef::new("events.k8s.io", "v1", "events", "Event", Scope::Namespaced)
            .short(&["ev"])
            .stored(|| Arc::new(EventStrategy), decode_as::<events::v1::Event>)
            .schema(schema_of::<events::v1::Event>)
            .stored_as("core/events", "v1")
            .validate(validation::kinds::events_event)
            .printer(Printer::Event)
            .fields(&selectors::EVENTS_V1_FIELDS),
    ];
