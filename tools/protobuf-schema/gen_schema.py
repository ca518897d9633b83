#!/usr/bin/env python3
"""Regenerates schema.rs, the field tables of the Kubernetes protobuf decoder.

Usage (from this directory):
    python3 tools/protobuf-schema/gen_schema.py crates/kopr-apiserver-core/src/protobuf/schema.rs

Inputs, read from the unpacked crate sources in the cargo registry (override
with K8S_PB_SRC / K8S_OPENAPI_SRC):
  * k8s-pb 0.9.0 (prost types): message names, field tags and wire types;
  * k8s-openapi 0.29.0, v1_37 (serde code): JSON field names and which
    fields are required;
  * pointers.txt (beside this script): Go pointer scalar fields, whose zero
    value must be kept because it differs from "unset".
Fetch both crates first, e.g. with `cargo fetch` in a crate depending on them.
The script fails if a pointers.txt entry matches no field, so typos and
upstream renames are caught.
"""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _registry(pattern):
    hits = sorted(glob.glob(os.path.expanduser('~/.cargo/registry/src/*/' + pattern)))
    return hits[-1] if hits else pattern


PB = os.environ.get('K8S_PB_SRC') or _registry('k8s-pb-0.9.0/src')
OA = os.environ.get('K8S_OPENAPI_SRC') or _registry('k8s-openapi-0.29.0/src/v1_37')

def pb_modules():
    for root, _, files in os.walk(PB):
        for f in files:
            if f == 'mod.rs':
                rel = os.path.relpath(root, PB)
                if rel == '.':
                    continue
                yield rel.replace(os.sep, '.'), os.path.join(root, f)

ATTR = re.compile(r'#\[prost\((.*?)\)\]\s*(?:///[^\n]*\n\s*)*pub (?:r#)?(\w+):\s*([^;]*?),\s*\n\s*(?:///|#\[|\})', re.S)
def parse_pb():
    msgs = {}
    kinds = []
    for mod, path in pb_modules():
        src = open(path).read()
        for m in re.finditer(r'pub struct (\w+) \{(.*?)\n\}', src, re.S):
            name, body = m.group(1), m.group(2) + '\n}'
            fields = []
            for a in ATTR.finditer(body):
                attr, fname, ty = a.group(1), a.group(2), re.sub(r'\s+', '', a.group(3))
                tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
                kind = attr.split(',')[0].strip()
                repeated = ', repeated' in attr
                mapv = None
                if kind.startswith('btree_map'):
                    mapv = re.search(r'btree_map = "string, (\w+)"', attr).group(1)
                    kind = 'map'
                elif kind.startswith('bytes'):
                    kind = 'bytes'
                msgref = None
                if kind == 'message' or (kind == 'map' and mapv == 'message'):
                    inner = ty
                    for w in ('::core::option::Option<', '::prost::alloc::vec::Vec<', '::prost::alloc::boxed::Box<', '::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,'):
                        inner = inner.replace(w, '')
                    inner = inner.rstrip('>,').rstrip(',')
                    parts = inner.split('::')
                    base = mod.split('.')
                    while parts and parts[0] == 'super':
                        base = base[:-1]; parts = parts[1:]
                    if parts and parts[0] == 'crate':
                        base = []; parts = parts[1:]
                    msgref = '.'.join(base + parts)
                fields.append(dict(tag=tag, name=fname, kind=kind, repeated=repeated, mapv=mapv, msg=msgref))
            msgs[mod + '.' + name] = fields
        for m in re.finditer(r'impl crate::Resource for (\w+) \{.*?const GROUP: &\'static str = "([^"]*)";\s*const VERSION: &\'static str = "([^"]*)";\s*const KIND: &\'static str = "([^"]*)";', src, re.S):
            kinds.append((m.group(2), m.group(3), m.group(4), mod + '.' + m.group(1)))
    return msgs, kinds

def parse_oa():
    out = {}
    for root, _, files in os.walk(OA):
        for f in files:
            if not f.endswith('.rs'):
                continue
            src = open(os.path.join(root, f)).read()
            d = re.search(r'// Generated from definition io\.k8s\.([\w.-]+)', src)
            if not d:
                continue
            fields = {}
            for m in re.finditer(r'if let Some\(value\) = &self\.(?:r#)?(\w+) \{\s*crate::serde::ser::SerializeStruct::serialize_field\(&mut state, "([^"]+)", value\)', src):
                fields[m.group(1)] = (m.group(2), False)
            for m in re.finditer(r'serialize_field\(&mut state, "([^"]+)", &self\.(?:r#)?(\w+)\)', src):
                fields[m.group(2)] = (m.group(1), True)
            # definition name -> pb message name
            out[d.group(1)] = fields
    return out

def norm(s):
    return s.replace('_', '').replace('-', '').lower()

GROUPS = ['api.core.v1','api.apps.v1','api.batch.v1','api.coordination.v1','api.events.v1','api.rbac.v1',
 'api.admissionregistration.v1','api.autoscaling.v1','api.autoscaling.v2','api.policy.v1','api.authentication.v1','api.authorization.v1',
 'api.networking.v1','api.scheduling.v1','api.certificates.v1','api.storage.v1','api.discovery.v1','api.node.v1',
 'api.flowcontrol.v1','kube_aggregator.pkg.apis.apiregistration.v1']
EXTRA = [('autoscaling','v1','Scale','api.autoscaling.v1.Scale'),('policy','v1','Eviction','api.policy.v1.Eviction'),
 ('authentication.k8s.io','v1','TokenRequest','api.authentication.v1.TokenRequest'),
 ('meta.k8s.io','v1','DeleteOptions','apimachinery.pkg.apis.meta.v1.DeleteOptions')]
SPECIAL = {'apimachinery.pkg.apis.meta.v1.Time':'Time','apimachinery.pkg.apis.meta.v1.MicroTime':'MicroTime',
 'apimachinery.pkg.apis.meta.v1.Duration':'Duration','apimachinery.pkg.api.resource.Quantity':'Quantity',
 'apimachinery.pkg.util.intstr.IntOrString':'IntOrString','apimachinery.pkg.runtime.RawExtension':'RawExtension',
 'apimachinery.pkg.apis.meta.v1.FieldsV1':'FieldsV1','api.authentication.v1.ExtraValue':'StringList',
 'api.authorization.v1.ExtraValue':'StringList','api.certificates.v1.ExtraValue':'StringList'}
def load():
    msgs, kinds = parse_pb(); oa = parse_oa()
    top = [k for k in kinds if any(k[3].startswith(g + '.') for g in GROUPS)] + EXTRA
    seen = []; stack = [k[3] for k in top]
    while stack:
        m = stack.pop()
        if m in seen or m in SPECIAL: continue
        seen.append(m)
        for f in msgs[m]:
            if f['msg']: stack.append(f['msg'])
    seen.sort()
    return msgs, oa, top, seen

msgs, oa, top, seen = load()
oan = {norm(k): v for k, v in oa.items()}
# The OpenAPI definition name of each message (e.g. `io.k8s.kube-aggregator…`
# where the prost module says `kube_aggregator`), which the merge rules key on.
oa_names = {norm(k): k for k in oa}
def openapi_name(m):
    return 'io.k8s.' + (m if m in oa else oa_names.get(norm(m), m))
def listed(name):
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        return set()
    return set(l.strip() for l in open(path) if l.strip() and not l.startswith('#'))
pointers = listed('pointers.txt')
# Go value (non-pointer) struct fields, always written by encoding/json; and
# fields without `omitempty`, always written too (see the two files' headers).
values = listed('values.txt')
always = listed('always.txt')
used_values = set(); used_always = set()
used_pointers = set()
idx = {m: i for i, m in enumerate(seen)}
SPECIAL_TY = {'Time':'Ty::Time','MicroTime':'Ty::MicroTime','Quantity':'Ty::Quantity','IntOrString':'Ty::IntOrString',
  'RawExtension':'Ty::RawExtension','FieldsV1':'Ty::FieldsV1','StringList':'Ty::StringList'}
def camel(s):
    p = s.split('_'); return p[0] + ''.join(x[:1].upper() + x[1:] for x in p[1:])
def key(m, j):
    parts = m.split('.')
    return '.'.join(parts[-3:-1] + [parts[-1], j])
def ty_of(f):
    if f['msg']:
        sp = SPECIAL.get(f['msg'])
        if sp: return SPECIAL_TY[sp]
        if sp is None and f['msg'] not in idx: raise SystemExit('unreached ' + f['msg'])
        return f'Ty::Msg({idx[f["msg"]]})'
    k = f['mapv'] if f['kind'] == 'map' else f['kind']
    t = {'bool':'Ty::Bool','int32':'Ty::Int32','int64':'Ty::Int64','string':'Ty::String','bytes':'Ty::Bytes'}.get(k)
    if t is None: raise SystemExit('unsupported scalar %s in %s' % (k, f))
    return t
out = []
warn = []
# Embedded-only Go structs (VolumeSource, ProbeHandler, ...) have no OpenAPI
# definition of their own: take their JSON names from the structs embedding them.
inline_parent = {}
for m in seen:
    o = oa.get(m) or oan.get(norm(m))
    if o is None: continue
    on = {norm(k) for k in o}
    for f in msgs[m]:
        if norm(f['name']) not in on and f['msg'] in msgs and f['kind'] == 'message':
            inline_parent.setdefault(f['msg'], {}).update(o)
for m in seen:
    o = oa.get(m) or oan.get(norm(m)) or inline_parent.get(m)
    on = {norm(k): v for k, v in (o or {}).items()}
    if o is None: warn.append('no openapi definition for ' + m)
    fl = []
    # Declaration (Go struct) order: the order encoding/json writes fields in.
    for f in msgs[m]:
        v = on.get(norm(f['name']))
        inline = False
        untyped = False
        if v is None:
            sub = msgs.get(f['msg']) if f['msg'] else None
            if o is not None and sub and f['kind'] == 'message' and not f['repeated'] and any(norm(s['name']) in on for s in sub):
                inline = True; json = ''; req = False
            else:
                json = camel(f['name']); req = False; untyped = True
                if o is not None: warn.append(f'no openapi field for {m}.{f["name"]}, using {json}')
        else:
            json, req = v
        k = key(m, json)
        ptr = k in pointers
        if ptr: used_pointers.add(k)
        card = 'Card::Map' if f['kind'] == 'map' else ('Card::Repeated' if f['repeated'] else 'Card::One')
        flags = []
        if ptr or req: flags.append('KEEP')
        if inline: flags.append('INLINE')
        if ptr: flags.append('POINTER')
        if k in values: flags.append('VALUE'); used_values.add(k)
        if k in always: flags.append('ALWAYS'); used_always.add(k)
        if req: flags.append('REQUIRED')
        if untyped: flags.append('UNTYPED')
        fl.append(f'        f({f["tag"]}, "{json}", {ty_of(f)}, {card}, {"|".join(flags) or "0"}),')
    pkg = openapi_name(m)
    out.append(f'    // {idx[m]}\n    Msg {{\n        name: "{pkg}",\n        fields: &[\n' + '\n'.join(fl) + '\n        ],\n    },')
missing = pointers - used_pointers
if missing: raise SystemExit('unused pointer entries: %s' % sorted(missing))
for name, want, used in (('values.txt', values, used_values), ('always.txt', always, used_always)):
    if want - used: print('%s entries matching no field: %s' % (name, sorted(want - used)), file=sys.stderr)
kinds = []
for name, i in sorted((openapi_name(m), idx[m]) for g, v, k, m in top if k != 'DeleteOptions'):
    kinds.append(f'    {i}, // {name}')
do = idx['apimachinery.pkg.apis.meta.v1.DeleteOptions']
om = idx['apimachinery.pkg.apis.meta.v1.ObjectMeta']
src = f'''//! Field tables for the Kubernetes protobuf decoder: one entry per message
//! type reachable from the supported kinds, named as kube's OpenAPI names it,
//! giving each field's tag, JSON name, wire type and zero-value handling.
//!
//! Generated by `gen_schema.py` (beside this file) from the `k8s-pb` 0.9.0
//! prost sources (tags, types) and the `k8s-openapi` 0.29.0 `v1_37` serde
//! code (JSON names, required fields), plus the hand-kept lists of Go pointer
//! fields (`pointers.txt`), value struct fields (`values.txt`) and fields
//! without `omitempty` (`always.txt`). Do not edit by hand; rerun the
//! generator.

use super::{{Card, Field, Msg, Ty}};

/// Keep a zero/empty value (Go pointer field or field without `omitempty`).
const KEEP: u8 = 1;
/// The nested message is an embedded Go struct whose fields are inlined into
/// the parent's JSON object.
const INLINE: u8 = 2;
/// A Go value (non-pointer) struct: encoding/json always writes it.
const VALUE: u8 = 4;
/// A Go field without `omitempty`: encoding/json always writes it.
const ALWAYS: u8 = 8;
/// A Go pointer to a scalar: its zero value differs from unset.
const POINTER: u8 = 16;
/// Required in the k8s-openapi type (not an `Option`): always written.
const REQUIRED: u8 = 32;
/// In the protos but not in the k8s-openapi type, which drops it as unknown.
const UNTYPED: u8 = 64;

const fn f(tag: u32, name: &'static str, ty: Ty, card: Card, flags: u8) -> Field {{
    Field {{
        tag,
        name,
        ty,
        card,
        keep_zero: flags & KEEP != 0,
        inline: flags & INLINE != 0,
        value_struct: flags & VALUE != 0,
        always: flags & ALWAYS != 0,
        pointer: flags & POINTER != 0,
        required: flags & REQUIRED != 0,
        untyped: flags & UNTYPED != 0,
    }}
}}

/// Index of `io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions` in [`MESSAGES`].
pub(super) const DELETE_OPTIONS: u16 = {do};

/// Index of `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` in [`MESSAGES`].
pub(crate) const OBJECT_META: u16 = {om};

/// The top-level kinds' messages (indices into [`MESSAGES`]), sorted by name.
pub(crate) static KINDS: &[u16] = &[
{chr(10).join(kinds)}
];

/// Message tables, by index: each message's OpenAPI definition name and its
/// fields in Go struct (declaration) order.
pub(crate) static MESSAGES: &[Msg] = &[
{chr(10).join(out)}
];
'''
open(sys.argv[1], 'w').write(src)
print('\n'.join(warn), file=sys.stderr)
print(len(seen), 'messages', len(kinds), 'kinds', file=sys.stderr)
subprocess.run(['rustfmt', '--edition', '2024', sys.argv[1]], check=True)
