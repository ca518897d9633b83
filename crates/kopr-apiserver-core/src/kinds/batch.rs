//! `batch`: Jobs and CronJobs.

use std::sync::Arc;

use k8s_openapi::api::batch;

use super::{ALL, generation};
use crate::defaults;
use crate::registry::strategy::Builtin;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::selectors;
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `batch`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new("batch", "v1", "cronjobs", "CronJob", Scope::Namespaced)
        .short(&["cj"])
        .categories(ALL)
        .subresources(&[Sub::Status])
        .stored(generation, decode_as::<batch::v1::CronJob>)
        .schema(schema_of::<batch::v1::CronJob>)
        .validate(validation::kinds::cronjob::cron_job)
        .default(defaults::by_kind::cron_job)
        .printer(Printer::CronJob),
    KindDef::new("batch", "v1", "jobs", "Job", Scope::Namespaced)
        .categories(ALL)
        .subresources(&[Sub::Status])
        .stored(|| Arc::new(Builtin::JOB), decode_as::<batch::v1::Job>)
        .schema(schema_of::<batch::v1::Job>)
        .validate(validation::kinds::job)
        .default(defaults::by_kind::job)
        .printer(Printer::Job)
        .fields(&selectors::JOB_FIELDS),
];
