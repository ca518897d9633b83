//! Cron schedules as kube's CronJobs use them (robfig/cron v3): parsing
//! with `ParseStandard` (shared by validation and the CronJob controller)
//! and the next activation time after an instant (`Schedule.Next`).

mod duration;
mod next;
mod parse;

use jiff::tz::TimeZone;

pub use duration::DurationError;
pub use parse::{
    AtoiError, LocationError, RangeError, ScheduleError, load_location, parse_standard,
};

/// The bit robfig/cron sets on a day field given as `*` or `?`: a day
/// then matches when both day fields do, otherwise when either does.
const STAR_BIT: u64 = 1 << 63;

/// The times of a five-field schedule (or a descriptor), one bit per
/// allowed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    second: u64,
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

/// What a schedule fires on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bits {
    /// Calendar fields.
    Spec(Spec),
    /// `@every <duration>`, in whole seconds (at least one).
    Every(u64),
}

/// A parsed schedule, in its time zone (UTC unless `TZ=`/`CRON_TZ=` named
/// one).
#[derive(Debug, Clone)]
pub struct Schedule {
    bits: Bits,
    tz: TimeZone,
}

impl Schedule {
    /// The next activation strictly after `t`, or None when there is none
    /// within five years (a schedule such as `0 0 31 2 *`).
    pub fn next(&self, t: jiff::Timestamp) -> Option<jiff::Timestamp> {
        next::next(self, t)
    }
}
