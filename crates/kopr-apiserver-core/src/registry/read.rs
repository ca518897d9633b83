//! get and list, with kube-apiserver's resourceVersion, selector and paging
//! semantics.

use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};

use super::{Api, Target, convert};
use crate::gojson;
use crate::resources::ResourceType;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::storage::{Entry, ListPage, ReadAtError, Stored};

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// `NotOlderThan`
    NotOlderThan,
    /// `Exact`
    Exact,
}

/// A 400 for invalid list options, in kube-apiserver's format.
pub fn invalid_list_options(detail: &str) -> ApiError {
    let mut e = ApiError::invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        format!("ListOptions.meta.k8s.io \"\" is invalid: {detail}"),
        Vec::new(),
    );
    e.code = 400;
    e.reason = "BadRequest".into();
    e
}

/// Options of a list (and the filter of a watch).
#[derive(Debug, Default)]
pub struct ListOptions {
    /// Label selector.
    pub labels: Option<LabelSelector>,
    /// Field selector.
    pub fields: Option<FieldSelector>,
    /// resourceVersion.
    pub resource_version: Option<i64>,
    /// Whether resourceVersion was "0" (any).
    pub any_version: bool,
    /// resourceVersionMatch.
    pub rv_match: Option<RvMatch>,
    /// limit (0 = none).
    pub limit: usize,
    /// continue token.
    pub continue_token: Option<String>,
}

/// The list parameters of a request, as the client sent them.
#[derive(Debug, Default, Clone, Copy)]
pub struct ListParams<'a> {
    /// `labelSelector`.
    pub label_selector: Option<&'a str>,
    /// `fieldSelector`.
    pub field_selector: Option<&'a str>,
    /// `resourceVersion`, as sent.
    pub resource_version: Option<&'a str>,
    /// `resourceVersion`, as a number (`None` when unset or empty).
    pub resource_version_number: Option<i64>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<RvMatch>,
    /// `limit` (0 = none).
    pub limit: usize,
    /// `continue`.
    pub continue_token: Option<&'a str>,
}

/// One page of a list, in the addressed version.
#[derive(Debug)]
pub struct ListResult {
    /// The objects.
    pub items: Vec<Arc<Value>>,
    /// The list's resourceVersion.
    pub resource_version: i64,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Items left after this page.
    pub remaining: Option<i64>,
}

impl ListResult {
    /// The ListMeta of this page.
    pub fn list_meta(&self) -> Value {
        list_meta(self.resource_version, &self.continue_token, self.remaining)
    }
}

/// A ListMeta.
fn list_meta(
    resource_version: i64,
    continue_token: &Option<String>,
    remaining: Option<i64>,
) -> Value {
    let mut m = json!({"resourceVersion": resource_version.to_string()});
    if let Some(c) = continue_token {
        m["continue"] = json!(c);
    }
    if let Some(r) = remaining.filter(|r| *r > 0) {
        m["remainingItemCount"] = json!(r);
    }
    m
}

impl ListOptions {
    /// Builds and checks list options from the request's parameters.
    pub fn from_params(rt: &ResourceType, q: &ListParams<'_>) -> Result<ListOptions, ApiError> {
        let labels = match q.label_selector {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match q.field_selector {
            Some(s) => Some(rt.field_selector(s)?),
            None => None,
        };
        let any_version = q.resource_version == Some("0");
        let resource_version = q.resource_version_number;
        if q.resource_version_match.is_some() && q.resource_version.unwrap_or("").is_empty() {
            return Err(invalid_list_options(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if q.continue_token.is_some() && q.resource_version.is_some_and(|s| !s.is_empty()) {
            return Err(invalid_list_options(
                "resourceVersion: Forbidden: specifying resource version is not allowed when using continue",
            ));
        }
        if q.resource_version_match == Some(RvMatch::Exact) && any_version {
            return Err(invalid_list_options(
                "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        Ok(ListOptions {
            labels,
            fields,
            resource_version,
            any_version,
            rv_match: q.resource_version_match,
            limit: q.limit,
            continue_token: q.continue_token.map(str::to_string),
        })
    }

    /// Whether an object (as the resource `rt` serves it) passes the selectors.
    pub fn matches(&self, rt: &ResourceType, obj: &Value) -> bool {
        if let Some(l) = &self.labels
            && !l.matches(crate::object::labels(obj))
        {
            return false;
        }
        if let Some(f) = &self.fields {
            let get = |label: &str| rt.field_value(obj, label);
            if !f.matches(&get) {
                return false;
            }
        }
        true
    }

    /// Whether any selector is set.
    pub fn filters(&self) -> bool {
        self.labels.as_ref().is_some_and(|l| !l.is_everything())
            || self.fields.as_ref().is_some_and(|f| !f.is_everything())
    }
}

const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn encode_continue(revision: i64, start_key_relative: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": format!("{start_key_relative}\u{0}")});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token))
        .map_err(|e| bad(&e.to_string()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    // -1: go on at the latest revision (the token an expired one's answer carries).
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .filter(|r| *r > 0 || *r == -1)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("encoded start key empty"))?;
    let start = start.strip_suffix('\u{0}').unwrap_or(start);
    if start.is_empty() || start.contains("..") || start.starts_with('/') {
        return Err(bad("continue key is not valid: invalid start key"));
    }
    Ok((rv, start.to_string()))
}

/// The 504 kube-apiserver answers for a resourceVersion from the future.
pub fn too_large_resource_version(requested: i64, current: i64) -> ApiError {
    let mut e = ApiError::new(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    );
    e.causes.push(crate::status::StatusCause {
        reason: "ResourceVersionTooLarge".into(),
        message: "Too large resource version".into(),
        field: String::new(),
    });
    e.retry_after_seconds = Some(1);
    e
}

impl Api {
    /// Reads one object.
    pub async fn get(&self, t: &Target) -> Result<Arc<Value>, ApiError> {
        let key = t.key()?;
        match self.store.get(&key).await? {
            Some(s) => self.view(&t.rt, &s.object).await,
            None => Err(ApiError::not_found(t.rt.reference(), t.name())),
        }
    }

    /// Lists objects of a resource in a namespace (or all namespaces).
    pub async fn list(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        // Objects a conversion webhook converts are selected as stored (but for their
        // apiVersion) and converted a page at a time, in one review.
        let converting = convert::converts_by_webhook(rt);
        let page = self
            .list_with(rt, namespace, opts, |item| {
                let stored = item.object()?;
                let view = convert::to_view(rt, &stored);
                opts.matches(rt, &view)
                    .then_some(if converting { stored } else { view })
            })
            .await?;
        let items = if converting {
            let list_kind = format!("{}List", rt.kind);
            self.views(rt, &page.items, Some(&list_kind)).await?
        } else {
            page.items
        };
        Ok(ListResult {
            items,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
            remaining: page.remaining,
        })
    }

    /// [`Api::list`] with each item already encoded as a JSON list writes it
    /// ([`gojson::list_item`]). Current objects served unchanged keep their encoding, so
    /// listing them again neither decodes nor encodes them.
    pub async fn list_encoded(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Page<Arc<[u8]>>, ApiError> {
        let api_version = rt.api_version();
        if convert::converts_by_webhook(rt) {
            let page = self.list(rt, namespace, opts).await?;
            return Ok(Page {
                items: page
                    .items
                    .iter()
                    .map(|view| gojson::list_item(&api_version, &rt.kind, view).into())
                    .collect(),
                resource_version: page.resource_version,
                continue_token: page.continue_token,
                remaining: page.remaining,
            });
        }
        // Current objects are read through the label index when the selector has a
        // `key=value` term; when that term is the whole selector, every one read matches.
        let unfiltered = !opts.filters()
            || (opts.fields.as_ref().is_none_or(|f| f.is_everything())
                && opts
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.is_one_required_value()));
        // Only objects served as stored keep their encoding: a CRD may gain defaults (applied
        // on every read) after an object's encoding was kept.
        let as_stored = rt.custom.as_ref().is_none_or(|c| !c.has_defaults)
            && rt.strategy.field_renames().is_empty();
        self.list_with(rt, namespace, opts, |item| {
            let entry = match &item {
                Item::Current(e) if as_stored => Some(e),
                Item::Current(_) | Item::At(_) => None,
            };
            if unfiltered && let Some(bytes) = entry.and_then(|e| e.served(&api_version)) {
                return Some(bytes);
            }
            let object = item.object()?;
            let view = convert::to_view(rt, &object);
            if !opts.matches(rt, &view) {
                return None;
            }
            let bytes: Arc<[u8]> = gojson::list_item(&api_version, &rt.kind, &view).into();
            if let Some(e) = entry.filter(|_| Arc::ptr_eq(&view, &object)) {
                e.set_served(&api_version, bytes.clone());
            }
            Some(bytes)
        })
        .await
    }

    /// The paging of a list: pages read from the current state, or at a revision, until
    /// `limit` items passed `keep` (which filters and converts them).
    async fn list_with<T>(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        opts: &ListOptions,
        mut keep: impl FnMut(Item) -> Option<T>,
    ) -> Result<Page<T>, ApiError> {
        let prefix = rt.list_prefix(namespace);
        let (mut at, mut start) = (None, None);
        if let Some(token) = &opts.continue_token {
            let (rv, rel) = decode_continue(token)?;
            at = (rv > 0).then_some(rv);
            start = Some(format!("{prefix}{rel}"));
        } else if let Some(rv) = opts.resource_version.filter(|_| !opts.any_version) {
            let current = self.store.current_revision();
            if rv > current {
                return Err(too_large_resource_version(rv, current));
            }
            if opts.rv_match == Some(RvMatch::Exact) {
                at = Some(rv);
            }
        }
        // The selector's most selective `key=value` (or `key in (...)`) term, if any: the
        // current state is then read through its label index.
        let indexed = opts.labels.as_ref().and_then(|l| {
            l.required_values()
                .min_by_key(|(label, values)| self.store.count_labelled(&prefix, label, values))
        });
        let mut items = Vec::new();
        let mut revision = None;
        loop {
            let want = if opts.limit == 0 {
                0
            } else {
                opts.limit - items.len()
            };
            let page: ListPage<Item> = match at {
                Some(rv) => match self
                    .store
                    .list_at(&prefix, rv, start.as_deref(), want)
                    .await
                {
                    Ok(p) => ListPage {
                        items: p.items.into_iter().map(Item::At).collect(),
                        revision: p.revision,
                        continue_key: p.continue_key,
                        remaining: p.remaining,
                    },
                    Err(ReadAtError::Compacted { .. }) if opts.continue_token.is_some() => {
                        // As kube's etcd3 store: a new token goes on from the same key at
                        // the latest revision (an inconsistent list, as the message says).
                        let mut expired = ApiError::expired(CONTINUE_EXPIRED);
                        let relative = start
                            .as_deref()
                            .and_then(|s| s.strip_prefix(prefix.as_str()))
                            .unwrap_or_default();
                        expired.continue_token = Some(encode_continue(-1, relative));
                        return Err(expired);
                    }
                    Err(ReadAtError::Compacted {
                        requested,
                        compacted,
                    }) => {
                        return Err(ApiError::expired(format!(
                            "too old resource version: {requested} ({compacted})"
                        )));
                    }
                    Err(ReadAtError::Storage(e)) => return Err(e.into()),
                },
                None => {
                    let p = match indexed {
                        Some((label, values)) => {
                            self.store
                                .list_labelled(&prefix, start.as_deref(), want, label, values)
                        }
                        None => self.store.list(&prefix, start.as_deref(), want),
                    };
                    ListPage {
                        items: p.items.into_iter().map(Item::Current).collect(),
                        revision: p.revision,
                        continue_key: p.continue_key,
                        remaining: p.remaining,
                    }
                }
            };
            // Later pages of one list are read at the first page's revision.
            at.get_or_insert(page.revision);
            revision.get_or_insert(page.revision);
            let page_len = page.items.len();
            items.extend(page.items.into_iter().filter_map(&mut keep));
            match page.continue_key {
                Some(k) if opts.limit > 0 && items.len() < opts.limit && page_len > 0 => {
                    start = Some(k)
                }
                Some(k) => {
                    let rel = k.strip_prefix(&prefix).unwrap_or(&k).to_string();
                    let rv = revision.unwrap_or(page.revision);
                    return Ok(Page {
                        items,
                        resource_version: rv,
                        continue_token: Some(encode_continue(rv, &rel)),
                        remaining: if opts.filters() { None } else { page.remaining },
                    });
                }
                None => {
                    return Ok(Page {
                        items,
                        resource_version: revision.unwrap_or(page.revision),
                        continue_token: None,
                        remaining: None,
                    });
                }
            }
        }
    }
}

/// One object a list read: current (still encoded) or at a past revision.
enum Item {
    Current(Arc<Entry>),
    At(Stored),
}

impl Item {
    fn object(&self) -> Option<Arc<Value>> {
        match self {
            Item::Current(e) => e.object(),
            Item::At(s) => Some(s.object.clone()),
        }
    }
}

/// One page of a list, its items of any form.
#[derive(Debug)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The list's resourceVersion.
    pub resource_version: i64,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Items left after this page.
    pub remaining: Option<i64>,
}

impl<T> Page<T> {
    /// The ListMeta of this page.
    pub fn list_meta(&self) -> Value {
        list_meta(self.resource_version, &self.continue_token, self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let t = encode_continue(42, "default/cm-1");
        assert_eq!(
            decode_continue(&t).unwrap(),
            (42, "default/cm-1".to_string())
        );
        assert_eq!(decode_continue("!!!").unwrap_err().code, 400);
        let bad = base64::engine::general_purpose::URL_SAFE
            .encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#);
        assert_eq!(decode_continue(&bad).unwrap_err().code, 400);
    }
}
