//! A resource's rate limit ([`Resource::rate_limit`](crate::Resource::rate_limit)): at most
//! `n` cycles of its objects start per second, in bursts of up to `n`, as a generic cell
//! rate algorithm (one timestamp, no background task).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The rate limit of one resource's cycles.
#[derive(Debug)]
pub(crate) struct Pace {
    /// Time between two cycles at the sustained rate.
    interval: Duration,
    /// How far ahead of now the schedule may run: a burst of `n` starts at once.
    tolerance: Duration,
    /// When the next cycle is due at the sustained rate.
    due: Mutex<Option<Instant>>,
}

impl Pace {
    /// At most `per_second` cycles a second (at least 1).
    pub(crate) fn new(per_second: u32) -> Pace {
        let per_second = per_second.max(1);
        let interval = Duration::from_secs(1) / per_second;
        Pace {
            interval,
            tolerance: interval * (per_second - 1),
            due: Mutex::new(None),
        }
    }

    /// Takes the next start and says how long to wait for it, counting from `now`.
    pub(crate) fn reserve(&self, now: Instant) -> Duration {
        let mut due = self.due.lock().unwrap_or_else(|p| p.into_inner());
        let start = due.map_or(now, |due| due.max(now));
        *due = Some(start + self.interval);
        start.saturating_duration_since(now + self.tolerance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_starts_at_once_and_the_rest_at_the_rate() {
        let pace = Pace::new(4);
        let now = Instant::now();
        let waits: Vec<Duration> = (0..6).map(|_| pace.reserve(now)).collect();
        let ms = Duration::from_millis;
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(0), ms(250), ms(500)]);
        // A second later the schedule has caught up: a new burst.
        let later = now + Duration::from_secs(3);
        assert_eq!(pace.reserve(later), ms(0));
    }
}
