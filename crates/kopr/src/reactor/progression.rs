//! Progression: what a handler's result means for its progress record (succeeded, failed for
//! good, or delayed for a retry) under its error policy, retry limit and timeout. Pure: the
//! record is persisted by the cycle, and the report is logged and posted by
//! [`super::posting`].

use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;

use crate::handling::errors::HandlerError;
use crate::handling::handlers::{ErrorsMode, HandlerOptions};
use crate::persistence::progress::Progress;

/// What to tell about an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Report {
    /// The handler succeeded.
    Succeeded,
    /// It failed with an error its policy ignores; the text says so.
    Ignored(String),
    /// It failed for good (permanently, out of retries or out of time).
    Failed(String),
    /// It failed and will be retried.
    Retrying(String),
}

/// The outcome of one attempt.
#[derive(Debug)]
pub(super) struct Step {
    /// The handler's next progress record.
    pub(super) record: Progress,
    /// Its result, to store, when it succeeded.
    pub(super) value: Option<Value>,
    /// What to log and post.
    pub(super) report: Report,
}

/// The next progress record of handler `id` after an attempt that started (first) at
/// `started` and ended at `finished_at` with `result`.
pub(super) fn progress(
    options: &HandlerOptions,
    id: &str,
    record: &Progress,
    started: Timestamp,
    result: Result<Value, HandlerError>,
    finished_at: Timestamp,
) -> Step {
    let mut next = Progress {
        started: Some(started),
        ..record.clone()
    };
    let error = match result {
        Ok(value) => {
            next.success = true;
            next.stopped = Some(finished_at);
            next.delayed = None;
            next.message = None;
            return Step {
                record: next,
                value: Some(value),
                report: Report::Succeeded,
            };
        }
        Err(error) => error,
    };
    let message = error.to_message();
    let retry_in = match error {
        HandlerError::Permanent(_) => None,
        HandlerError::Temporary(_, delay) => Some(delay),
        HandlerError::Other(_) => match options.errors {
            ErrorsMode::Temporary => Some(options.backoff),
            ErrorsMode::Permanent => None,
            ErrorsMode::Ignored => {
                let text = format!("Handler '{id}' failed with an error, ignored: {message}");
                next.success = true;
                next.stopped = Some(finished_at);
                next.message = Some(message);
                return Step {
                    record: next,
                    value: None,
                    report: Report::Ignored(text),
                };
            }
        },
    };
    next.message = Some(message.clone());
    let failed = |mut next: Progress, text: String| {
        next.failure = true;
        next.stopped = Some(finished_at);
        next.delayed = None;
        Step {
            record: next,
            value: None,
            report: Report::Failed(text),
        }
    };
    let Some(delay) = retry_in else {
        return failed(
            next,
            format!("Handler '{id}' failed permanently: {message}"),
        );
    };
    next.retries = next.retries.saturating_add(1);
    if let Some(limit) = options.retries.filter(|&limit| next.retries >= limit) {
        let text = format!("Handler '{id}' has exceeded {limit} retries: {message}");
        return failed(next, text);
    }
    let total = Duration::try_from(finished_at.duration_since(started)).unwrap_or_default();
    if let Some(timeout) = options.timeout.filter(|&t| total + delay > t) {
        let text = format!("Handler '{id}' has timed out after {timeout:?}: {message}");
        return failed(next, text);
    }
    let delay_signed = jiff::SignedDuration::try_from(delay).unwrap_or(jiff::SignedDuration::ZERO);
    next.delayed = finished_at.checked_add(delay_signed).ok();
    let text = format!(
        "Handler '{id}' failed temporarily: {message} (attempt {}, retrying in {delay:?})",
        next.retries
    );
    Step {
        record: next,
        value: None,
        report: Report::Retrying(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(retries: Option<u32>) -> HandlerOptions {
        HandlerOptions {
            retries,
            ..HandlerOptions::default()
        }
    }

    #[test]
    fn results_become_records_and_reports() {
        let now = Timestamp::now();
        let fresh = Progress::default();
        let ok = progress(&options(None), "h", &fresh, now, Ok(Value::from(1)), now);
        assert!(ok.record.success && ok.report == Report::Succeeded);
        assert_eq!(ok.value, Some(Value::from(1)));

        let temporary = HandlerError::temporary("busy", Duration::from_secs(5));
        let retry = progress(&options(None), "h", &fresh, now, Err(temporary), now);
        assert_eq!(retry.record.retries, 1);
        assert!(retry.record.delayed.is_some() && !retry.record.is_finished());
        assert!(matches!(&retry.report, Report::Retrying(t) if t.contains("retrying in 5s")));

        let temporary = HandlerError::temporary("busy", Duration::from_secs(5));
        let out = progress(&options(Some(1)), "h", &fresh, now, Err(temporary), now);
        assert!(out.record.failure);
        assert!(matches!(&out.report, Report::Failed(t) if t.contains("exceeded 1 retries")));

        let permanent = HandlerError::permanent("no");
        let failed = progress(&options(None), "h", &fresh, now, Err(permanent), now);
        assert!(failed.record.failure && failed.record.is_finished());
        assert_eq!(
            failed.report,
            Report::Failed("Handler 'h' failed permanently: no".into())
        );
    }
}
