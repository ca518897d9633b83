//! Query parameters of API requests, parsed and checked as kube-apiserver
//! does (empty `&` segments, as kube-rs sends, are ignored).

use crate::registry::WriteOptions;
pub use crate::registry::{FieldValidation, RvMatch, invalid_list_options};
use crate::status::ApiError;

/// The query options of one request.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// `watch`
    pub watch: bool,
    /// `resourceVersion`
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`
    pub resource_version_match: Option<RvMatch>,
    /// `limit` (0 = none)
    pub limit: usize,
    /// `continue`
    pub continue_token: Option<String>,
    /// `labelSelector`
    pub label_selector: Option<String>,
    /// `fieldSelector`
    pub field_selector: Option<String>,
    /// `timeoutSeconds`
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`
    pub send_initial_events: Option<bool>,
    /// `dryRun=All`
    pub dry_run: bool,
    /// `fieldValidation`
    pub field_validation: Option<FieldValidation>,
    /// `fieldManager`
    pub field_manager: Option<String>,
    /// `force`
    pub force: bool,
    /// `propagationPolicy`
    pub propagation_policy: Option<String>,
    /// `gracePeriodSeconds`
    pub grace_period_seconds: Option<i64>,
    /// `orphanDependents`
    pub orphan_dependents: Option<bool>,
    /// `includeObject` (tables)
    pub include_object: Option<String>,
    /// `container` (logs)
    pub container: Option<String>,
    /// `tailLines` (logs)
    pub tail_lines: Option<i64>,
    /// `follow` (logs)
    pub follow: bool,
    /// `timestamps` (logs)
    pub timestamps: bool,
    /// `previous` (logs)
    pub previous: bool,
}

fn parse_bool(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "" | "true" | "1" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "false" | "0" | "False" | "FALSE" | "f" | "F" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "failed to parse query parameter {name}: strconv.ParseBool: parsing \"{v}\": invalid syntax"
        ))),
    }
}

/// Whether a raw query string asks for a watch (`watch` true as
/// [`Query::parse`] reads it), for request attributes before the query is
/// parsed in full.
pub fn asks_for_watch(raw: Option<&str>) -> bool {
    raw.into_iter().flat_map(|q| q.split('&')).any(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        k == "watch" && parse_bool("watch", v).unwrap_or(false)
    })
}

fn parse_int<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, ApiError> {
    v.parse::<T>().map_err(|_| {
        ApiError::bad_request(format!(
            "failed to parse query parameter {name}: strconv.ParseInt: parsing \"{v}\": invalid syntax"
        ))
    })
}

impl Query {
    /// Write options from the query; the field manager defaults to the
    /// User-Agent's product name.
    pub fn write_options(&self, user_agent: &str) -> WriteOptions {
        WriteOptions {
            dry_run: self.dry_run,
            field_validation: self.field_validation.unwrap_or_default(),
            field_manager: self
                .field_manager
                .clone()
                .unwrap_or_else(|| WriteOptions::manager_from_user_agent(user_agent)),
            force: self.force,
            user: None,
        }
    }

    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Result<Query, ApiError> {
        let mut q = Query::default();
        let Some(raw) = raw else { return Ok(q) };
        for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
            let v = v.as_ref();
            match k.as_ref() {
                "" => {}
                "watch" => q.watch = parse_bool("watch", v)?,
                "resourceVersion" => q.resource_version = Some(v.to_string()),
                "resourceVersionMatch" => {
                    q.resource_version_match = match v {
                        "" => None,
                        "NotOlderThan" => Some(RvMatch::NotOlderThan),
                        "Exact" => Some(RvMatch::Exact),
                        other => {
                            return Err(invalid_list_options(&format!(
                                "resourceVersionMatch: Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
                            )));
                        }
                    }
                }
                "limit" => q.limit = parse_int::<i64>("limit", v)?.max(0) as usize,
                "continue" => q.continue_token = Some(v.to_string()).filter(|s| !s.is_empty()),
                "labelSelector" => q.label_selector = Some(v.to_string()).filter(|s| !s.is_empty()),
                "fieldSelector" => q.field_selector = Some(v.to_string()).filter(|s| !s.is_empty()),
                "timeoutSeconds" => {
                    q.timeout_seconds = Some(parse_int::<i64>("timeoutSeconds", v)?.max(0) as u64)
                }
                "allowWatchBookmarks" => {
                    q.allow_watch_bookmarks = parse_bool("allowWatchBookmarks", v)?
                }
                "sendInitialEvents" => {
                    q.send_initial_events = Some(parse_bool("sendInitialEvents", v)?)
                }
                "dryRun" => match v {
                    "All" => q.dry_run = true,
                    "" => {}
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
                        )));
                    }
                },
                "fieldValidation" => {
                    q.field_validation = Some(match v {
                        "Ignore" => FieldValidation::Ignore,
                        "Warn" | "" => FieldValidation::Warn,
                        "Strict" => FieldValidation::Strict,
                        other => {
                            return Err(ApiError::bad_request(format!(
                                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
                            )));
                        }
                    })
                }
                "fieldManager" => q.field_manager = Some(v.to_string()).filter(|s| !s.is_empty()),
                "force" => q.force = parse_bool("force", v)?,
                "propagationPolicy" => {
                    q.propagation_policy = Some(v.to_string()).filter(|s| !s.is_empty())
                }
                "gracePeriodSeconds" => {
                    q.grace_period_seconds = Some(parse_int("gracePeriodSeconds", v)?)
                }
                "orphanDependents" => {
                    q.orphan_dependents = Some(parse_bool("orphanDependents", v)?)
                }
                "includeObject" => q.include_object = Some(v.to_string()),
                "container" => q.container = Some(v.to_string()).filter(|s| !s.is_empty()),
                "tailLines" => q.tail_lines = Some(parse_int("tailLines", v)?),
                "follow" => q.follow = parse_bool("follow", v)?,
                "timestamps" => q.timestamps = parse_bool("timestamps", v)?,
                "previous" => q.previous = parse_bool("previous", v)?,
                _ => {}
            }
        }
        Ok(q)
    }

    /// The resourceVersion as a number, if set and not empty.
    pub fn resource_version_number(&self) -> Result<Option<i64>, ApiError> {
        match self.resource_version.as_deref() {
            None | Some("") => Ok(None),
            Some(s) => s
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .map(Some)
                .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {s}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_are_recognized_before_full_parsing() {
        assert!(asks_for_watch(Some("watch=true&labelSelector=a")));
        assert!(asks_for_watch(Some("&watch=1")));
        assert!(asks_for_watch(Some("watch")));
        assert!(!asks_for_watch(Some("watch=false")));
        assert!(!asks_for_watch(Some("watchy=true")));
        assert!(!asks_for_watch(None));
    }

    #[test]
    fn tolerates_empty_segments() {
        let q = Query::parse(Some(
            "&watch=true&resourceVersion=5&&allowWatchBookmarks=true",
        ))
        .unwrap();
        assert!(q.watch && q.allow_watch_bookmarks);
        assert_eq!(q.resource_version_number().unwrap(), Some(5));
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(Query::parse(Some("limit=x")).unwrap_err().code, 400);
        assert_eq!(Query::parse(Some("dryRun=Some")).unwrap_err().code, 400);
        assert_eq!(Query::parse(Some("watch=maybe")).unwrap_err().code, 400);
        let q = Query::parse(Some("resourceVersion=abc")).unwrap();
        assert_eq!(q.resource_version_number().unwrap_err().code, 400);
    }
}
