//! Giving back to the system the memory a burst of handling freed.
//!
//! glibc's malloc keeps freed memory in its arenas for reuse, and returns it to the system only
//! from the top of the main arena. After a burst (the first listing of many objects, a mass
//! update), the operator's resident set would stay at the burst's peak although what it keeps
//! per object at rest is small. So when the last busy worker goes idle and at least
//! [`TRIM_AFTER`] cycles ran since the last time, the reactor asks malloc to return its free
//! pages (`malloc_trim(0)`), as long-running glibc programs commonly do after a phase of heavy
//! allocation. It takes a few milliseconds, at a time when nothing is being handled.
//!
//! Only with glibc (`target_env = "gnu"`); elsewhere, or when the program sets another global
//! allocator (which then holds the freed memory, not glibc), it does nothing of note.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The cycles after which going idle trims: fewer cannot have freed much.
pub(crate) const TRIM_AFTER: u64 = 100;

/// Workers running and cycles since the last trim.
struct Activity {
    busy: AtomicUsize,
    cycles: AtomicU64,
}

impl Activity {
    const fn new() -> Activity {
        Activity {
            busy: AtomicUsize::new(0),
            cycles: AtomicU64::new(0),
        }
    }

    fn start(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    fn cycled(&self) {
        self.cycles.fetch_add(1, Ordering::AcqRel);
    }

    /// A worker ended: whether it is time to trim (and the cycle count starts over).
    fn end(&self) -> bool {
        self.busy.fetch_sub(1, Ordering::AcqRel) == 1
            && self.cycles.load(Ordering::Acquire) >= TRIM_AFTER
            && self.cycles.swap(0, Ordering::AcqRel) >= TRIM_AFTER
    }
}

/// The whole process's workers: memory is the process's.
static ACTIVITY: Activity = Activity::new();

/// A running worker; when the last one ends, the memory freed meanwhile may go back.
pub(crate) struct Busy(());

impl Busy {
    pub(crate) fn start() -> Busy {
        ACTIVITY.start();
        Busy(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if ACTIVITY.end() {
            trim();
        }
    }
}

/// Counts a cycle run.
pub(crate) fn cycled() {
    ACTIVITY.cycled();
}

/// Returns malloc's free pages to the system.
fn trim() {
    let started = std::time::Instant::now();
    release_free_pages();
    tracing::debug!(took = ?started.elapsed(), "returned free memory to the system");
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_pages() {
    // SAFETY: `malloc_trim` only walks glibc's own arenas under their locks; it takes no
    // pointer and may be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_pages() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_worker_going_idle_after_enough_cycles_trims() {
        let activity = Activity::new();
        activity.start();
        activity.start();
        for _ in 0..TRIM_AFTER {
            activity.cycled();
        }
        assert!(!activity.end(), "another worker is busy");
        assert!(activity.end());
        activity.start();
        activity.cycled();
        assert!(!activity.end(), "too few cycles since the last trim");
        // The real thing runs (and does no harm).
        drop(Busy::start());
        trim();
    }
}
