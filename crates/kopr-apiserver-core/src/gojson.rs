//! JSON as kube-apiserver's Go encoder writes it: built-in objects with
//! their fields in Go struct order (`kind`, `apiVersion`, `metadata`, ...)
//! and Go's zero-value rules (value structs such as a Service's
//! `status.loadBalancer` always written, `omitempty` fields left out when
//! empty, fields without it always written), Status bodies in
//! `metav1.Status` order, lists as `kind`, `apiVersion`, `metadata`,
//! `items` (the items of built-in lists without their TypeMeta), Tables and
//! PartialObjectMetadata in their metav1 order; map keys sorted; strings escaped as Go escapes them (`<`, `>`,
//! `&`, U+2028 and U+2029 as `\u` escapes). Custom resources and anything
//! else without a Go type are written with sorted keys, as Go writes
//! `map[string]interface{}`.
//!
//! The field tables are the protobuf decoder's ([`crate::protobuf`]),
//! generated from the Go types.

use std::io;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

use crate::protobuf::schema::{MESSAGES, OBJECT_META};
use crate::protobuf::{Card, Field, Msg, Ty, message_of};

/// Serialises `value` as kube-apiserver writes JSON (no trailing newline).
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, GoFormatter);
    if value.serialize(&mut ser).is_err() {
        out.clear();
        out.extend_from_slice(b"null");
    }
    out
}

/// `value` as kube's Go encoder writes it, read back as JSON: a built-in object with its
/// value structs and fields without `omitempty` filled in (see the module documentation);
/// anything else as it is.
pub fn as_go_writes(value: &Value) -> Value {
    serde_json::from_slice(&to_vec(&Ordered(value))).unwrap_or_else(|_| value.clone())
}

/// A pod template (`PodTemplateSpec`) as kube's Go encoder writes it, read back as JSON:
/// the form in which kube compares templates.
pub fn pod_template_as_go_writes(template: &Value) -> Value {
    let wrapped = serde_json::json!({
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {},
        "template": template,
    });
    match as_go_writes(&wrapped) {
        Value::Object(mut m) => m.remove("template").unwrap_or(Value::Null),
        _ => template.clone(),
    }
}

/// A JSON value written in kube's order: see the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Ordered<'a>(pub &'a Value);

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(map) = self.0 else {
            return Plain(self.0).serialize(s);
        };
        let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == "Status" && matches!(api_version, "v1" | "meta.k8s.io/v1") {
            return Layout::Fixed(STATUS).write(map, s);
        }
        if matches!(api_version, "meta.k8s.io/v1" | "meta.k8s.io/v1beta1") {
            match kind {
                "Table" => return Layout::Table.write(map, s),
                "PartialObjectMetadata" => return Layout::Partial.write(map, s),
                "PartialObjectMetadataList" => return Layout::PartialList.write(map, s),
                _ => {}
            }
        }
        if let Some(msg) = message_of(api_version, kind) {
            return Layout::Kind(msg).write(map, s);
        }
        if let Some(item_kind) = kind.strip_suffix("List")
            && map.get("items").is_some_and(Value::is_array)
            && let Some(msg) = message_of(api_version, item_kind)
        {
            return Layout::List(msg).write(map, s);
        }
        Plain(self.0).serialize(s)
    }
}

/// A list body: built-in kinds' lists as their Go list types write them
/// (`kind`, `apiVersion`, `metadata`, `items`), custom resources' with
/// sorted keys as kube writes an UnstructuredList; each item in its own
/// kind's order.
pub struct List<'a> {
    /// `<Kind>List`.
    pub kind: &'a str,
    /// The list's apiVersion.
    pub api_version: &'a str,
    /// The ListMeta.
    pub metadata: &'a Value,
    /// The items.
    pub items: &'a [std::sync::Arc<Value>],
}

impl Serialize for List<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let empty = Map::new();
        let meta = self.metadata.as_object().unwrap_or(&empty);
        let item_kind = self.kind.strip_suffix("List").unwrap_or(self.kind);
        let builtin = message_of(self.api_version, item_kind);
        let mut m = s.serialize_map(Some(4))?;
        if builtin.is_some() {
            m.serialize_entry("kind", self.kind)?;
            m.serialize_entry("apiVersion", self.api_version)?;
            m.serialize_entry("metadata", &Fixed(meta, LIST_META))?;
            m.serialize_entry("items", &ArcItems(self.items, builtin))?;
        } else {
            m.serialize_entry("apiVersion", self.api_version)?;
            m.serialize_entry("items", &ArcItems(self.items, None))?;
            m.serialize_entry("kind", self.kind)?;
            m.serialize_entry("metadata", &Plain(self.metadata))?;
        }
        m.end()
    }
}

/// One item of a list of `kind` at `api_version`, as [`List`] writes it: a built-in
/// object without `kind` and `apiVersion`, anything else in [`Ordered`] form.
pub fn list_item(api_version: &str, kind: &str, item: &Value) -> Vec<u8> {
    match (message_of(api_version, kind), item) {
        (Some(msg), Value::Object(o)) => to_vec(&Laid(Layout::Item(msg), o)),
        _ => to_vec(&Ordered(item)),
    }
}

/// The bytes of [`List`] from items already encoded by [`list_item`] (no trailing newline).
pub fn encoded_list(
    kind: &str,
    api_version: &str,
    metadata: &Value,
    items: &[std::sync::Arc<[u8]>],
) -> Vec<u8> {
    let empty = Map::new();
    let meta = metadata.as_object().unwrap_or(&empty);
    let item_kind = kind.strip_suffix("List").unwrap_or(kind);
    let size: usize = items.iter().map(|i| i.len() + 1).sum();
    let mut out = Vec::with_capacity(size + 256);
    let push_items = |out: &mut Vec<u8>| {
        out.extend_from_slice(b"\"items\":[");
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        out.push(b']');
    };
    if message_of(api_version, item_kind).is_some() {
        out.extend_from_slice(b"{\"kind\":");
        out.extend(to_vec(kind));
        out.extend_from_slice(b",\"apiVersion\":");
        out.extend(to_vec(api_version));
        out.extend_from_slice(b",\"metadata\":");
        out.extend(to_vec(&Fixed(meta, LIST_META)));
        out.push(b',');
        push_items(&mut out);
    } else {
        out.extend_from_slice(b"{\"apiVersion\":");
        out.extend(to_vec(api_version));
        out.push(b',');
        push_items(&mut out);
        out.extend_from_slice(b",\"kind\":");
        out.extend(to_vec(kind));
        out.extend_from_slice(b",\"metadata\":");
        out.extend(to_vec(&Plain(metadata)));
    }
    out.push(b'}');
    out
}

/// Stored items, each in its own kind's order; items of a built-in list
/// (its item message given) without `kind` and `apiVersion`, as Go's typed
/// lists carry no TypeMeta on their items.
struct ArcItems<'a>(&'a [std::sync::Arc<Value>], Option<&'static Msg>);

impl Serialize for ArcItems<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match (self.1, item.as_ref()) {
                (Some(msg), Value::Object(o)) => {
                    seq.serialize_element(&Laid(Layout::Item(msg), o))?
                }
                _ => seq.serialize_element(&Ordered(item))?,
            }
        }
        seq.end()
    }
}

/// The fields of `metav1.Status`, `StatusDetails` and `StatusCause` in Go
/// order; `metadata` (a ListMeta value) always written.
const STATUS: &[&str] = &[
    "kind",
    "apiVersion",
    "metadata",
    "status",
    "message",
    "reason",
    "details",
    "code",
];
const STATUS_DETAILS: &[&str] = &[
    "name",
    "group",
    "kind",
    "uid",
    "causes",
    "retryAfterSeconds",
];
const STATUS_CAUSE: &[&str] = &["reason", "message", "field"];
/// `metav1.ListMeta`, every field `omitempty`.
const LIST_META: &[&str] = &[
    "selfLink",
    "resourceVersion",
    "continue",
    "remainingItemCount",
];

/// How one JSON object is laid out.
#[derive(Clone, Copy)]
enum Layout {
    /// A top-level built-in object: `kind`, `apiVersion`, then its fields.
    Kind(&'static Msg),
    /// An item of a built-in list: its fields without `kind` and `apiVersion`.
    Item(&'static Msg),
    /// A list of built-in objects.
    List(&'static Msg),
    /// A nested message.
    Message(&'static Msg),
    /// A fixed key order (Status and its parts); `metadata` always written.
    Fixed(&'static [&'static str]),
    /// `metav1.Table`: `kind`, `apiVersion`, `metadata`, `columnDefinitions`, `rows`.
    Table,
    /// `metav1.PartialObjectMetadata`: `kind`, `apiVersion`, then ObjectMeta in Go order.
    Partial,
    /// `metav1.PartialObjectMetadataList`, its items each a [`Layout::Partial`].
    PartialList,
}

impl Layout {
    fn write<S: Serializer>(self, map: &Map<String, Value>, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let mut known: Vec<&str> = Vec::new();
        match self {
            Layout::Kind(msg) => {
                for k in ["kind", "apiVersion"] {
                    if let Some(v) = map.get(k).filter(|v| !is_empty(v)) {
                        m.serialize_entry(k, &Plain(v))?;
                    }
                    known.push(k);
                }
                write_fields(&mut m, map, msg, &mut known)?;
            }
            Layout::Message(msg) => write_fields(&mut m, map, msg, &mut known)?,
            Layout::Item(msg) => {
                known.extend(["kind", "apiVersion"]);
                write_fields(&mut m, map, msg, &mut known)?;
            }
            Layout::List(msg) => {
                for k in ["kind", "apiVersion"] {
                    if let Some(v) = map.get(k).filter(|v| !is_empty(v)) {
                        m.serialize_entry(k, &Plain(v))?;
                    }
                }
                let empty = Map::new();
                let meta = map
                    .get("metadata")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                m.serialize_entry("metadata", &Fixed(meta, LIST_META))?;
                let items = map.get("items").and_then(Value::as_array);
                m.serialize_entry("items", &Items(items.map_or(&[][..], Vec::as_slice), msg))?;
                known.extend(["kind", "apiVersion", "metadata", "items"]);
            }
            Layout::Table | Layout::Partial | Layout::PartialList => {
                for k in ["kind", "apiVersion"] {
                    if let Some(v) = map.get(k).filter(|v| !is_empty(v)) {
                        m.serialize_entry(k, &Plain(v))?;
                    }
                }
                let empty = Map::new();
                let meta = map
                    .get("metadata")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                let array = |k: &str| map.get(k).and_then(Value::as_array).map(Vec::as_slice);
                match self {
                    Layout::Partial => match object_meta() {
                        Some(msg) => {
                            m.serialize_entry("metadata", &Laid(Layout::Message(msg), meta))?
                        }
                        None => {
                            m.serialize_entry("metadata", &Plain(&Value::Object(meta.clone())))?
                        }
                    },
                    _ => m.serialize_entry("metadata", &Fixed(meta, LIST_META))?,
                }
                match self {
                    Layout::Table => {
                        m.serialize_entry(
                            "columnDefinitions",
                            &Each(array("columnDefinitions"), Part::Column),
                        )?;
                        m.serialize_entry("rows", &Each(array("rows"), Part::Row))?;
                    }
                    Layout::PartialList => {
                        m.serialize_entry("items", &Each(array("items"), Part::Partial))?;
                    }
                    _ => {}
                }
                known.extend([
                    "kind",
                    "apiVersion",
                    "metadata",
                    "columnDefinitions",
                    "rows",
                    "items",
                ]);
            }
            Layout::Fixed(keys) => {
                for k in keys {
                    known.push(k);
                    match (*k, map.get(*k)) {
                        ("metadata", None) => m.serialize_entry("metadata", &Map::new())?,
                        ("metadata", Some(Value::Object(meta))) => {
                            m.serialize_entry("metadata", &Fixed(meta, LIST_META))?
                        }
                        ("details", Some(Value::Object(d))) => {
                            m.serialize_entry("details", &Fixed(d, STATUS_DETAILS))?
                        }
                        ("causes", Some(Value::Array(causes))) if !causes.is_empty() => {
                            m.serialize_entry("causes", &Causes(causes))?
                        }
                        (_, Some(v)) if !is_empty(v) || *k == "details" => {
                            m.serialize_entry(*k, &Plain(v))?
                        }
                        _ => {}
                    }
                }
            }
        }
        // Keys the Go type does not know (newer fields, say): sorted, last.
        for (k, v) in map {
            if !known.contains(&k.as_str()) && !v.is_null() {
                m.serialize_entry(k, &Plain(v))?;
            }
        }
        m.end()
    }
}

/// Writes a message's fields in Go order, as encoding/json decides.
fn write_fields<M: SerializeMap>(
    m: &mut M,
    map: &Map<String, Value>,
    msg: &'static Msg,
    known: &mut Vec<&'static str>,
) -> Result<(), M::Error> {
    for f in msg.fields {
        if f.inline {
            if let Ty::Msg(i) = f.ty
                && let Some(inner) = MESSAGES.get(usize::from(i))
            {
                write_fields(m, map, inner, known)?;
            }
            continue;
        }
        known.push(f.name);
        let v = map.get(f.name).filter(|v| !v.is_null());
        match f.card {
            Card::Repeated | Card::Map => match v {
                // A nil slice or map: protobuf storage does not tell empty from nil.
                Some(v) if !is_empty(v) => m.serialize_entry(f.name, &Typed(v, f))?,
                _ if f.always => m.serialize_entry(f.name, &Value::Null)?,
                _ => {}
            },
            Card::One => match (v, zero_of(f)) {
                (Some(v), _) if f.pointer || is_struct(f.ty) => {
                    m.serialize_entry(f.name, &Typed(v, f))?
                }
                (Some(v), _) if f.always || !is_zero_scalar(v) => {
                    m.serialize_entry(f.name, &Typed(v, f))?
                }
                (Some(_), _) => {}
                (None, Zero::Struct(inner)) if f.value_struct => {
                    m.serialize_entry(f.name, &Laid(Layout::Message(inner), &Map::new()))?
                }
                (None, Zero::Value(z)) if f.value_struct || (f.always && !f.pointer) => {
                    m.serialize_entry(f.name, &z)?
                }
                (None, _) if f.always => m.serialize_entry(f.name, &Value::Null)?,
                (None, _) => {}
            },
        }
    }
    Ok(())
}

/// What Go writes for an unset field.
enum Zero {
    /// A value struct: its own fields' zero values.
    Struct(&'static Msg),
    /// A scalar's or special type's zero.
    Value(Value),
}

fn zero_of(f: &Field) -> Zero {
    match f.ty {
        Ty::Msg(i) => match MESSAGES.get(usize::from(i)) {
            Some(msg) => Zero::Struct(msg),
            None => Zero::Value(Value::Null),
        },
        Ty::Bool => Zero::Value(Value::Bool(false)),
        Ty::Int32 | Ty::Int64 | Ty::IntOrString => Zero::Value(Value::from(0)),
        Ty::String | Ty::Bytes => Zero::Value(Value::String(String::new())),
        Ty::Quantity => Zero::Value(Value::String("0".into())),
        Ty::Time | Ty::MicroTime | Ty::RawExtension | Ty::FieldsV1 | Ty::StringList => {
            Zero::Value(Value::Null)
        }
    }
}

fn is_struct(ty: Ty) -> bool {
    !matches!(
        ty,
        Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::String | Ty::Bytes
    )
}

fn is_zero_scalar(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// A map written with a layout.
struct Laid<'a>(Layout, &'a Map<String, Value>);

impl Serialize for Laid<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.write(self.1, s)
    }
}

/// A field's value, written per its type (nested messages in order).
struct Typed<'a>(&'a Value, &'static Field);

impl Serialize for Typed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Ty::Msg(i) = self.1.ty else {
            return Plain(self.0).serialize(s);
        };
        let Some(msg) = MESSAGES.get(usize::from(i)) else {
            return Plain(self.0).serialize(s);
        };
        match (self.1.card, self.0) {
            (Card::One, Value::Object(o)) => Layout::Message(msg).write(o, s),
            (Card::Repeated, Value::Array(a)) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for item in a {
                    match item {
                        Value::Object(o) => {
                            seq.serialize_element(&Laid(Layout::Message(msg), o))?
                        }
                        other => seq.serialize_element(&Plain(other))?,
                    }
                }
                seq.end()
            }
            (Card::Map, Value::Object(entries)) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    match v {
                        Value::Object(o) => m.serialize_entry(k, &Laid(Layout::Message(msg), o))?,
                        other => m.serialize_entry(k, &Plain(other))?,
                    }
                }
                m.end()
            }
            (_, other) => Plain(other).serialize(s),
        }
    }
}

/// List items, each in its kind's order.
struct Items<'a>(&'a [Value], &'static Msg);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            match item {
                Value::Object(o) => seq.serialize_element(&Laid(Layout::Item(self.1), o))?,
                other => seq.serialize_element(&Plain(other))?,
            }
        }
        seq.end()
    }
}

/// `metav1.TableColumnDefinition`: every field written, empty or not.
const TABLE_COLUMN: &[&str] = &["name", "type", "format", "description", "priority"];
/// `metav1.TableRowCondition`.
const TABLE_ROW_CONDITION: &[&str] = &["type", "status", "reason", "message"];

/// The message table of ObjectMeta.
fn object_meta() -> Option<&'static Msg> {
    MESSAGES.get(usize::from(OBJECT_META))
}

/// What the elements of an [`Each`] are.
#[derive(Clone, Copy)]
enum Part {
    /// A Table's column definition.
    Column,
    /// A Table's row: `cells`, `conditions` (when any), `object` (null when none).
    Row,
    /// A PartialObjectMetadata.
    Partial,
}

/// The elements of an array, each laid out as `Part` says (`null` for no array,
/// as Go writes a nil slice).
struct Each<'a>(Option<&'a [Value]>, Part);

impl Serialize for Each<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(items) = self.0 else {
            return s.serialize_unit();
        };
        let mut seq = s.serialize_seq(Some(items.len()))?;
        for item in items {
            match (self.1, item) {
                (Part::Column, Value::Object(o)) => {
                    seq.serialize_element(&Exact(o, TABLE_COLUMN))?
                }
                (Part::Row, Value::Object(o)) => seq.serialize_element(&Row(o))?,
                (Part::Partial, Value::Object(o)) => {
                    seq.serialize_element(&Laid(Layout::Partial, o))?
                }
                (_, other) => seq.serialize_element(&Plain(other))?,
            }
        }
        seq.end()
    }
}

/// A map with the given keys first, in order, written whatever their value.
struct Exact<'a>(&'a Map<String, Value>, &'static [&'static str]);

impl Serialize for Exact<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for k in self.1 {
            if let Some(v) = self.0.get(*k) {
                m.serialize_entry(*k, &Plain(v))?;
            }
        }
        for (k, v) in self.0 {
            if !self.1.contains(&k.as_str()) {
                m.serialize_entry(k, &Plain(v))?;
            }
        }
        m.end()
    }
}

/// A `metav1.TableRow`.
struct Row<'a>(&'a Map<String, Value>);

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let null = Value::Null;
        m.serialize_entry("cells", &Plain(self.0.get("cells").unwrap_or(&null)))?;
        if let Some(Value::Array(conditions)) = self.0.get("conditions")
            && !conditions.is_empty()
        {
            let laid: Vec<Exact<'_>> = conditions
                .iter()
                .filter_map(Value::as_object)
                .map(|c| Exact(c, TABLE_ROW_CONDITION))
                .collect();
            m.serialize_entry("conditions", &laid)?;
        }
        m.serialize_entry("object", &Ordered(self.0.get("object").unwrap_or(&null)))?;
        for (k, v) in self.0 {
            if !matches!(k.as_str(), "cells" | "conditions" | "object") {
                m.serialize_entry(k, &Plain(v))?;
            }
        }
        m.end()
    }
}

/// A map in a fixed key order.
struct Fixed<'a>(&'a Map<String, Value>, &'static [&'static str]);

impl Serialize for Fixed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for k in self.1 {
            if let Some(v) = self
                .0
                .get(*k)
                .filter(|v| !is_empty(v) && !is_zero_scalar(v))
            {
                if *k == "causes"
                    && let Value::Array(causes) = v
                {
                    m.serialize_entry(*k, &Causes(causes))?;
                } else {
                    m.serialize_entry(*k, &Plain(v))?;
                }
            }
        }
        for (k, v) in self.0 {
            if !self.1.contains(&k.as_str()) && !v.is_null() {
                m.serialize_entry(k, &Plain(v))?;
            }
        }
        m.end()
    }
}

/// Status causes, each `reason`, `message`, `field`.
struct Causes<'a>(&'a [Value]);

impl Serialize for Causes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            match c {
                Value::Object(o) => seq.serialize_element(&Fixed(o, STATUS_CAUSE))?,
                other => seq.serialize_element(&Plain(other))?,
            }
        }
        seq.end()
    }
}

/// A value written as it is: maps with sorted keys (Go's map order).
struct Plain<'a>(&'a Value);

impl Serialize for Plain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// serde_json's compact output with Go's string escaping: encoding/json
/// (HTML-safe by default, as kube's serializer leaves it) also escapes
/// `<`, `>`, `&`, U+2028 and U+2029.
struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Only these bytes start what Go escapes (0xE2 leads U+2028 and U+2029).
        if !fragment
            .bytes()
            .any(|b| matches!(b, b'<' | b'>' | b'&' | 0xE2))
        {
            return w.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let escape = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            w.write_all(&fragment.as_bytes()[start..i])?;
            w.write_all(escape.as_bytes())?;
            start = i + c.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn text(v: &Value) -> String {
        String::from_utf8(to_vec(&Ordered(v))).unwrap()
    }

    #[test]
    fn status_in_go_order_with_go_escapes() {
        let status = json!({"apiVersion": "v1", "code": 422, "details": {"causes": [
            {"field": "target.kind", "message": "Unsupported value: \"<empty>\"", "reason": "FieldValueNotSupported"}],
            "kind": "Binding", "name": "p"}, "kind": "Status", "message": "a & b",
            "metadata": {}, "reason": "Invalid", "status": "Failure"});
        assert_eq!(
            text(&status),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"a \u0026 b","reason":"Invalid","details":{"name":"p","kind":"Binding","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: \"\u003cempty\u003e\"","field":"target.kind"}]},"code":422}"#
        );
    }

    #[test]
    fn custom_resources_keep_sorted_keys() {
        let cr = json!({"kind": "Tool", "apiVersion": "example.com/v1", "metadata": {"name": "t"}, "spec": {"b": 1, "a": 2}});
        assert_eq!(
            text(&cr),
            r#"{"apiVersion":"example.com/v1","kind":"Tool","metadata":{"name":"t"},"spec":{"a":2,"b":1}}"#
        );
    }

    #[test]
    fn built_in_objects_in_struct_order() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
            "metadata": {"uid": "u", "name": "c", "namespace": "default", "resourceVersion": "5",
                "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            text(&cm),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"default","uid":"u","resourceVersion":"5","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"k":"v"}}"#
        );
    }

    #[test]
    fn lists_put_items_last() {
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [],
            "metadata": {"resourceVersion": "7"}});
        assert_eq!(
            text(&list),
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}"#
        );
    }

    #[test]
    fn encoded_lists_are_the_lists_of_their_items() {
        let cm = Arc::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "<v>"},
            "metadata": {"name": "c", "resourceVersion": "5"}}),
        );
        let cr = Arc::new(json!({"apiVersion": "example.com/v1", "kind": "Tool",
            "metadata": {"name": "t"}, "spec": {"b": 1, "a": 2}}));
        let meta = json!({"resourceVersion": "9", "continue": "abc", "remainingItemCount": 3});
        for (kind, av, items) in [
            ("ConfigMapList", "v1", vec![cm.clone(), cm.clone()]),
            ("ConfigMapList", "v1", vec![]),
            ("ToolList", "example.com/v1", vec![cr.clone(), cr.clone()]),
            ("ToolList", "example.com/v1", vec![]),
        ] {
            let list = List {
                kind,
                api_version: av,
                metadata: &meta,
                items: &items,
            };
            let item_kind = kind.strip_suffix("List").unwrap();
            let encoded: Vec<Arc<[u8]>> = items
                .iter()
                .map(|i| Arc::from(list_item(av, item_kind, i)))
                .collect();
            assert_eq!(
                String::from_utf8(encoded_list(kind, av, &meta, &encoded)).unwrap(),
                String::from_utf8(to_vec(&list)).unwrap()
            );
        }
    }
}
