//! Decoder for Kubernetes protobuf request bodies
//! (`Content-Type: application/vnd.kubernetes.protobuf`).
//!
//! The wire form is the 4-byte magic `k8s\0` followed by a `runtime.Unknown`
//! message (`typeMeta{apiVersion, kind}`, `raw`, `contentEncoding`,
//! `contentType`) whose `raw` bytes are the protobuf encoding of the object.
//! [`decode`] turns such a body into the JSON value that the same object would
//! have had as a JSON request body from a Go client: camelCase field names,
//! `Time`/`MicroTime` as RFC 3339 strings, `Quantity` as a string,
//! `IntOrString` as a number or string, bytes as base64, `RawExtension` and
//! `FieldsV1` as embedded JSON, and `apiVersion`/`kind` taken from the
//! envelope.
//!
//! Go's protobuf encoder always writes non-pointer scalar fields, so a zero
//! value (`""`, `0`, `false`) on the wire usually means "unset". Such zeros are
//! dropped, as Go's JSON encoder drops them through `omitempty`, except for
//! fields where zero is meaningful: Go pointer fields (`replicas: 0`,
//! `gracePeriodSeconds: 0`, `automountServiceAccountToken: false`, ...) and
//! required fields. The per-type field tables live in the generated
//! [`schema`] module (see `gen_schema.py`); they are also the type graph the
//! built-in kinds' merge rules are walked along (`crate::merge`).
//!
//! Malformed input of any kind yields a [`ProtobufError`]; the decoder never
//! panics and bounds its recursion depth.

mod canonical;
pub(crate) mod schema;
mod zero;

#[cfg(test)]
pub(crate) use canonical::samples;
pub(crate) use canonical::{decodes_unchanged, object_meta_unchanged};
pub(crate) use zero::drop_zero_values;

use std::collections::HashMap;

use base64::Engine as _;
use serde_json::{Map, Value};

/// The magic prefix of the Kubernetes protobuf envelope.
const MAGIC: &[u8; 4] = b"k8s\0";
/// Maximum nesting of messages (and envelopes embedded in `RawExtension`).
const MAX_DEPTH: usize = 100;
/// Go's `time.Time{}` expressed as Unix seconds (0001-01-01T00:00:00Z).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Why a protobuf request body could not be decoded. The `Display` text is
/// meant for the message of a 400 BadRequest `Status`.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body is empty.
    #[error("empty body")]
    Empty,
    /// The body does not start with the `k8s\0` magic.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NotProtobuf,
    /// The envelope's `typeMeta.kind` is empty.
    #[error("Object 'Kind' is missing in protobuf-encoded body")]
    MissingKind,
    /// The envelope's `typeMeta.apiVersion` is empty.
    #[error("Object 'apiVersion' is missing in protobuf-encoded body of kind {kind:?}")]
    MissingVersion {
        /// The kind named by the envelope.
        kind: String,
    },
    /// The envelope names a kind this decoder has no schema for.
    #[error(
        "no kind {kind:?} is registered for version {api_version:?} in the protobuf decoder; \
         send the body as application/json instead"
    )]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The protobuf bytes are malformed or hold a value with no JSON form.
    #[error("unable to decode protobuf body{}: {reason}", at_path(path))]
    Malformed {
        /// Dotted JSON path of the field being decoded (empty at top level).
        path: String,
        /// What is wrong, in the style of Go's protobuf errors.
        reason: String,
    },
    /// Messages are nested more deeply than any Kubernetes object allows.
    #[error("unable to decode protobuf body: messages nest deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

fn malformed(reason: impl Into<String>) -> ProtobufError {
    ProtobufError::Malformed {
        path: String::new(),
        reason: reason.into(),
    }
}

/// Prefixes the path of a `Malformed` error with `seg` (a field name or `[i]`).
fn within(seg: &str) -> impl FnOnce(ProtobufError) -> ProtobufError + '_ {
    move |e| match e {
        ProtobufError::Malformed { path, reason } => {
            let path = if path.is_empty() {
                seg.to_owned()
            } else if path.starts_with('[') || seg.is_empty() {
                format!("{seg}{path}")
            } else {
                format!("{seg}.{path}")
            };
            ProtobufError::Malformed { path, reason }
        }
        other => other,
    }
}

/// Decodes a Kubernetes protobuf request body (`k8s\0` + `runtime.Unknown`)
/// into the JSON form of the object, including `apiVersion` and `kind` from
/// the envelope.
///
/// Supports every kind of core/v1, apps/v1, batch/v1, coordination/v1,
/// events/v1, rbac/v1, admissionregistration/v1, autoscaling/v1 and v2
/// (including `Scale`), policy/v1 (including `Eviction`), networking/v1,
/// storage/v1, discovery/v1, scheduling/v1, node/v1, certificates/v1,
/// authentication/v1 (including `TokenRequest`) and authorization/v1, plus
/// `DeleteOptions` under any apiVersion.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_envelope(body, 0)
}

fn decode_envelope(body: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    if body.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let data = body.strip_prefix(MAGIC).ok_or(ProtobufError::NotProtobuf)?;
    if data.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        match tag {
            1 => {
                let mut tm = Reader::new(r.len_delimited(wire, "typeMeta")?);
                while !tm.is_empty() {
                    let (tag, wire) = tm.key()?;
                    match tag {
                        1 => api_version = lossy(tm.len_delimited(wire, "apiVersion")?),
                        2 => kind = lossy(tm.len_delimited(wire, "kind")?),
                        _ => tm.skip(wire)?,
                    }
                }
            }
            2 => raw = r.len_delimited(wire, "raw")?,
            // contentEncoding / contentType: ignored, as kube-apiserver does.
            _ => r.skip(wire)?,
        }
    }
    if kind.is_empty() {
        return Err(ProtobufError::MissingKind);
    }
    if api_version.is_empty() {
        return Err(ProtobufError::MissingVersion { kind });
    }
    let msg = if kind == "DeleteOptions" {
        schema::DELETE_OPTIONS
    } else {
        match kind_message(&api_version, &kind) {
            Some(msg) => msg,
            None => return Err(ProtobufError::UnknownKind { api_version, kind }),
        }
    };
    let mut obj = Map::new();
    decode_message(raw, msg, &mut obj, depth + 1)?;
    obj.insert("apiVersion".to_owned(), Value::String(api_version));
    obj.insert("kind".to_owned(), Value::String(kind));
    Ok(Value::Object(obj))
}

/// A field's value type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty {
    Bool,
    Int32,
    Int64,
    String,
    /// `[]byte`, as base64 in JSON.
    Bytes,
    /// A nested message, by index into [`schema::MESSAGES`].
    Msg(u16),
    /// `meta/v1.Time`: RFC 3339 at second precision, `null` when zero.
    Time,
    /// `meta/v1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `resource.Quantity`: its string form.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: embedded JSON.
    RawExtension,
    /// `meta/v1.FieldsV1`: embedded JSON.
    FieldsV1,
    /// A `[]string` wrapped in a message (`ExtraValue`): a JSON array.
    StringList,
}

/// A field's cardinality.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Card {
    One,
    Repeated,
    /// `map<string, ty>`.
    Map,
}

/// One field of a message table.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) tag: u32,
    pub(crate) name: &'static str,
    pub(crate) ty: Ty,
    pub(crate) card: Card,
    /// Keep zero values (Go pointer or non-`omitempty` field).
    pub(crate) keep_zero: bool,
    /// Merge the nested message's fields into the parent (embedded struct).
    pub(crate) inline: bool,
    /// A Go value (non-pointer) struct, which encoding/json always writes.
    pub(crate) value_struct: bool,
    /// A Go field without `omitempty`, which encoding/json always writes.
    pub(crate) always: bool,
    /// A Go pointer to a scalar: a zero value is written when set.
    pub(crate) pointer: bool,
    /// Required in the k8s-openapi type (not an `Option`), which always writes it.
    pub(crate) required: bool,
    /// In the protos only: the k8s-openapi type lacks it and drops it as unknown.
    pub(crate) untyped: bool,
}

/// One message table: its OpenAPI definition name (e.g.
/// `io.k8s.api.core.v1.Container`) and its fields in Go struct order.
#[derive(Debug)]
pub(crate) struct Msg {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [Field],
}

/// The index in [`schema::MESSAGES`] of a top-level kind's message, by
/// `apiVersion` and `kind`.
///
/// Kube names a built-in group's types after the group's first label
/// (`io.k8s.api.<label>.<version>.<Kind>`, `core` for the legacy group; the
/// aggregator's under `io.k8s.kube-aggregator.pkg.apis`). Only the legacy
/// group, dotless groups and `*.k8s.io` groups are built in: a custom
/// resource's group (which has a dot and is not `k8s.io`'s) has no message.
pub(crate) fn kind_message(api_version: &str, kind: &str) -> Option<u16> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let label = match group.split_once('.') {
        None if group.is_empty() => "core",
        None => group,
        Some((label, _)) if group.ends_with(".k8s.io") => label,
        Some(_) => return None,
    };
    KIND_INDEX.get(label)?.get(version)?.get(kind).copied()
}

/// The top-level kinds' messages by group label, version and kind, as [`kind_message`] looks
/// them up (the first of [`PACKAGES`] wins), built once: a lookup builds no string.
type KindIndex = HashMap<&'static str, HashMap<&'static str, HashMap<&'static str, u16>>>;
static KIND_INDEX: std::sync::LazyLock<KindIndex> = std::sync::LazyLock::new(|| {
    let mut index = KindIndex::new();
    for root in PACKAGES {
        for &i in schema::KINDS {
            let Some(rest) = message_name(i)
                .strip_prefix(root)
                .and_then(|r| r.strip_prefix('.'))
            else {
                continue;
            };
            let mut parts = rest.splitn(3, '.');
            if let (Some(label), Some(version), Some(kind)) =
                (parts.next(), parts.next(), parts.next())
            {
                index
                    .entry(label)
                    .or_default()
                    .entry(version)
                    .or_default()
                    .entry(kind)
                    .or_insert(i);
            }
        }
    }
    index
});

/// Where kube's OpenAPI names put the built-in groups' types.
const PACKAGES: &[&str] = &["io.k8s.api", "io.k8s.kube-aggregator.pkg.apis"];

/// The OpenAPI name of a message.
fn message_name(index: u16) -> &'static str {
    schema::MESSAGES
        .get(usize::from(index))
        .map_or("", |m| m.name)
}

/// The message table of a top-level kind, by `apiVersion` and `kind`.
pub(crate) fn message_of(api_version: &str, kind: &str) -> Option<&'static Msg> {
    schema::MESSAGES.get(usize::from(kind_message(api_version, kind)?))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes the message `msg` from `buf`, merging into `obj` (protobuf merge
/// semantics: later scalars win, repeated fields append, messages merge).
fn decode_message(
    buf: &[u8],
    msg: u16,
    obj: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let table = schema::MESSAGES
        .get(usize::from(msg))
        .ok_or_else(|| malformed("internal error: unknown message table"))?;
    let mut r = Reader::new(buf);
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        // Fields are in Go struct order, not tag order: a short scan.
        let Some(field) = table.fields.iter().find(|f| f.tag == tag) else {
            r.skip(wire)?;
            continue;
        };
        decode_field(&mut r, wire, field, obj, depth).map_err(within(field.name))?;
    }
    Ok(())
}

fn decode_field(
    r: &mut Reader<'_>,
    wire: u8,
    field: &Field,
    obj: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), ProtobufError> {
    match field.card {
        Card::One => {
            if let Ty::Msg(m) = field.ty {
                let bytes = r.len_delimited(wire, field.name)?;
                if field.inline {
                    return decode_message(bytes, m, obj, depth + 1);
                }
                let mut inner = match obj.remove(field.name) {
                    Some(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                decode_message(bytes, m, &mut inner, depth + 1)?;
                obj.insert(field.name.to_owned(), Value::Object(inner));
                return Ok(());
            }
            let v = read_value(r, wire, field.ty, field.name, depth)?;
            if !field.keep_zero && is_zero(&v, field.ty) {
                obj.remove(field.name);
            } else {
                obj.insert(field.name.to_owned(), v);
            }
        }
        Card::Repeated => {
            let list = match obj
                .entry(field.name.to_owned())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(list) => list,
                other => {
                    *other = Value::Array(Vec::new());
                    match other {
                        Value::Array(list) => list,
                        _ => return Err(malformed("internal error: list expected")),
                    }
                }
            };
            let packable = matches!(field.ty, Ty::Bool | Ty::Int32 | Ty::Int64);
            if packable && wire == WIRE_LEN {
                let mut packed = Reader::new(r.len_delimited(wire, field.name)?);
                while !packed.is_empty() {
                    let seg = format!("[{}]", list.len());
                    let v = read_value(&mut packed, WIRE_VARINT, field.ty, field.name, depth)
                        .map_err(within(&seg))?;
                    list.push(v);
                }
            } else {
                let seg = format!("[{}]", list.len());
                let v = match field.ty {
                    Ty::Msg(m) => {
                        let bytes = r.len_delimited(wire, field.name)?;
                        let mut inner = Map::new();
                        decode_message(bytes, m, &mut inner, depth + 1).map_err(within(&seg))?;
                        Value::Object(inner)
                    }
                    ty => read_value(r, wire, ty, field.name, depth).map_err(within(&seg))?,
                };
                list.push(v);
            }
        }
        Card::Map => {
            let mut entry = Reader::new(r.len_delimited(wire, field.name)?);
            let mut key = String::new();
            let mut value = None;
            while !entry.is_empty() {
                let (tag, wire) = entry.key()?;
                match tag {
                    1 => key = lossy(entry.len_delimited(wire, "key")?),
                    2 => {
                        value = Some(match field.ty {
                            Ty::Msg(m) => {
                                let bytes = entry.len_delimited(wire, "value")?;
                                let mut inner = Map::new();
                                decode_message(bytes, m, &mut inner, depth + 1)?;
                                Value::Object(inner)
                            }
                            ty => read_value(&mut entry, wire, ty, "value", depth)?,
                        });
                    }
                    _ => entry.skip(wire)?,
                }
            }
            let value = match value {
                Some(v) => v,
                None => zero_value(field.ty, depth).map_err(within(&key))?,
            };
            let map = match obj
                .entry(field.name.to_owned())
                .or_insert_with(|| Value::Object(Map::new()))
            {
                Value::Object(map) => map,
                other => {
                    *other = Value::Object(Map::new());
                    match other {
                        Value::Object(map) => map,
                        _ => return Err(malformed("internal error: map expected")),
                    }
                }
            };
            map.insert(key, value);
        }
    }
    Ok(())
}

/// The JSON of a map value whose entry carries no value field.
fn zero_value(ty: Ty, depth: usize) -> Result<Value, ProtobufError> {
    Ok(match ty {
        Ty::Bool => Value::Bool(false),
        Ty::Int32 | Ty::Int64 | Ty::IntOrString => Value::from(0),
        Ty::String | Ty::Bytes => Value::String(String::new()),
        Ty::Msg(_) => Value::Object(Map::new()),
        Ty::StringList => Value::Array(Vec::new()),
        Ty::Time | Ty::MicroTime => Value::Null,
        Ty::Quantity => quantity_json(&[])?,
        Ty::RawExtension | Ty::FieldsV1 => raw_json(&[], false, depth)?,
    })
}

/// Whether `v` is the Go zero value that `omitempty` would drop.
fn is_zero(v: &Value, ty: Ty) -> bool {
    match (ty, v) {
        (Ty::Bool, Value::Bool(b)) => !b,
        (Ty::Int32 | Ty::Int64, Value::Number(n)) => n.as_i64() == Some(0),
        (Ty::String | Ty::Bytes, Value::String(s)) => s.is_empty(),
        (Ty::Quantity, Value::String(s)) => s.is_empty() || s == "0",
        (Ty::IntOrString, Value::Number(n)) => n.as_i64() == Some(0),
        (Ty::IntOrString, Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// Reads one non-message value of type `ty`.
fn read_value(
    r: &mut Reader<'_>,
    wire: u8,
    ty: Ty,
    name: &str,
    depth: usize,
) -> Result<Value, ProtobufError> {
    Ok(match ty {
        Ty::Bool => Value::Bool(r.varint_field(wire, name)? != 0),
        // Truncation is the protobuf rule for int32 varints.
        Ty::Int32 => Value::from(r.varint_field(wire, name)? as i32),
        Ty::Int64 => Value::from(r.varint_field(wire, name)? as i64),
        Ty::String => Value::String(lossy(r.len_delimited(wire, name)?)),
        Ty::Bytes => Value::String(
            base64::engine::general_purpose::STANDARD.encode(r.len_delimited(wire, name)?),
        ),
        Ty::Msg(m) => {
            let mut inner = Map::new();
            decode_message(r.len_delimited(wire, name)?, m, &mut inner, depth + 1)?;
            Value::Object(inner)
        }
        Ty::Time => time_json(r.len_delimited(wire, name)?, false)?,
        Ty::MicroTime => time_json(r.len_delimited(wire, name)?, true)?,
        Ty::Quantity => quantity_json(r.len_delimited(wire, name)?)?,
        Ty::IntOrString => int_or_string_json(r.len_delimited(wire, name)?)?,
        Ty::RawExtension => raw_json(r.len_delimited(wire, name)?, true, depth)?,
        Ty::FieldsV1 => raw_json(r.len_delimited(wire, name)?, false, depth)?,
        Ty::StringList => {
            let mut inner = Reader::new(r.len_delimited(wire, name)?);
            let mut items = Vec::new();
            while !inner.is_empty() {
                let (tag, wire) = inner.key()?;
                if tag == 1 {
                    items.push(Value::String(lossy(inner.len_delimited(wire, "items")?)));
                } else {
                    inner.skip(wire)?;
                }
            }
            Value::Array(items)
        }
    })
}

/// `Time` / `MicroTime` (`{seconds = 1, nanos = 2}`) to JSON, following
/// apimachinery: an empty message is the zero time (`null`); `Time` drops the
/// nanoseconds, `MicroTime` keeps microseconds.
fn time_json(buf: &[u8], micro: bool) -> Result<Value, ProtobufError> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let mut r = Reader::new(buf);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        match tag {
            1 => seconds = r.varint_field(wire, "seconds")? as i64,
            2 => nanos = i64::from(r.varint_field(wire, "nanos")? as i32),
            _ => r.skip(wire)?,
        }
    }
    if !micro {
        nanos = 0;
    }
    // Normalise like Go's time.Unix.
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    let secs = total.div_euclid(1_000_000_000);
    let sub = total.rem_euclid(1_000_000_000);
    if secs == i128::from(GO_ZERO_TIME_SECONDS) && sub == 0 {
        return Ok(Value::Null);
    }
    let secs = i64::try_from(secs).map_err(|_| malformed("time out of range"))?;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return Err(malformed("time year outside of range [0,9999]"));
    }
    let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
    let text = if micro {
        format!(
            "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:06}Z",
            sub / 1000
        )
    } else {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    };
    Ok(Value::String(text))
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `Quantity` (`{string = 1}`) to its string form; absent means `"0"`.
fn quantity_json(buf: &[u8]) -> Result<Value, ProtobufError> {
    let mut r = Reader::new(buf);
    let mut s = String::from("0");
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        if tag == 1 {
            s = lossy(r.len_delimited(wire, "string")?);
        } else {
            r.skip(wire)?;
        }
    }
    Ok(Value::String(s))
}

/// `IntOrString` (`{type = 1, intVal = 2, strVal = 3}`) to a number or string.
fn int_or_string_json(buf: &[u8]) -> Result<Value, ProtobufError> {
    let mut r = Reader::new(buf);
    let (mut ty, mut int_val, mut str_val) = (0i64, 0i32, String::new());
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        match tag {
            1 => ty = r.varint_field(wire, "type")? as i64,
            2 => int_val = r.varint_field(wire, "intVal")? as i32,
            3 => str_val = lossy(r.len_delimited(wire, "strVal")?),
            _ => r.skip(wire)?,
        }
    }
    match ty {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        _ => Err(malformed(format!("impossible IntOrString.Type {ty}"))),
    }
}

/// `RawExtension` / `FieldsV1` (`{raw = 1}`) to embedded JSON. A
/// `RawExtension` may also carry a protobuf-encoded object.
fn raw_json(buf: &[u8], allow_protobuf: bool, depth: usize) -> Result<Value, ProtobufError> {
    let mut r = Reader::new(buf);
    let mut raw: &[u8] = &[];
    while !r.is_empty() {
        let (tag, wire) = r.key()?;
        if tag == 1 {
            raw = r.len_delimited(wire, "raw")?;
        } else {
            r.skip(wire)?;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if allow_protobuf && raw.starts_with(MAGIC) {
        return decode_envelope(raw, depth + 1);
    }
    serde_json::from_slice(raw).map_err(|e| malformed(format!("embedded JSON is invalid: {e}")))
}

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_START_GROUP: u8 = 3;
const WIRE_END_GROUP: u8 = 4;
const WIRE_FIXED32: u8 = 5;

/// A cursor over protobuf wire bytes; every read is bounds-checked.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for (i, &b) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.buf = self.buf.get(i + 1..).unwrap_or_default();
                return Ok(value);
            }
        }
        if self.buf.len() >= 10 {
            Err(malformed("proto: integer overflow"))
        } else {
            Err(malformed("unexpected EOF"))
        }
    }

    fn key(&mut self) -> Result<(u32, u8), ProtobufError> {
        let k = self.varint()?;
        let wire = (k & 7) as u8;
        let tag = k >> 3;
        if tag == 0 || tag > u64::from(u32::MAX >> 3) {
            return Err(malformed(format!(
                "proto: illegal tag {tag} (wire type {wire})"
            )));
        }
        if wire > WIRE_FIXED32 {
            return Err(malformed(format!("proto: illegal wireType {wire}")));
        }
        Ok((tag as u32, wire))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], ProtobufError> {
        let n = usize::try_from(n).map_err(|_| malformed("unexpected EOF"))?;
        if n > self.buf.len() {
            return Err(malformed("unexpected EOF"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn wrong_wire(wire: u8, name: &str) -> ProtobufError {
        malformed(format!("proto: wrong wireType = {wire} for field {name}"))
    }

    fn len_delimited(&mut self, wire: u8, name: &str) -> Result<&'a [u8], ProtobufError> {
        if wire != WIRE_LEN {
            return Err(Self::wrong_wire(wire, name));
        }
        let n = self.varint()?;
        self.take(n)
    }

    fn varint_field(&mut self, wire: u8, name: &str) -> Result<u64, ProtobufError> {
        if wire != WIRE_VARINT {
            return Err(Self::wrong_wire(wire, name));
        }
        self.varint()
    }

    /// Skips an unknown field's value (including groups, nested to a bound).
    fn skip(&mut self, wire: u8) -> Result<(), ProtobufError> {
        let mut groups = 0usize;
        let mut wire = wire;
        loop {
            match wire {
                WIRE_VARINT => {
                    self.varint()?;
                }
                WIRE_FIXED64 => {
                    self.take(8)?;
                }
                WIRE_LEN => {
                    let n = self.varint()?;
                    self.take(n)?;
                }
                WIRE_START_GROUP => {
                    groups += 1;
                    if groups > MAX_DEPTH {
                        return Err(ProtobufError::TooDeep);
                    }
                }
                WIRE_END_GROUP => {
                    if groups == 0 {
                        return Err(malformed("proto: unexpected end group"));
                    }
                    groups -= 1;
                }
                WIRE_FIXED32 => {
                    self.take(4)?;
                }
                _ => return Err(malformed(format!("proto: illegal wireType {wire}"))),
            }
            if groups == 0 {
                return Ok(());
            }
            wire = self.key()?.1;
        }
    }
}

#[cfg(test)]
mod tests;
