//! The layering check: each top-level module of a crate's `src/` may import (through
//! `crate::…`, including `use crate::{a, b::c}`) only the modules that `xtask/layers.txt`
//! allows it. The table lists the modules bottom up; a module may name only modules listed
//! above it, so the allowed edges can only point down. An edge marked `name!` is a known
//! upward edge (part of a module cycle), tolerated until it is cut: the check fails once it
//! is gone, so that the table stays true. A module missing from the table fails too.
//!
//! Test code is not checked: files named `tests.rs` and the items under a `#[cfg(test)]`
//! attribute. Comments and string literals are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const TABLE: &str = "xtask/layers.txt";

/// One crate's table: its modules in order, each with what it may import.
#[derive(Debug, Default)]
struct Table {
    src: String,
    order: Vec<String>,
    allowed: BTreeMap<String, BTreeSet<String>>,
    tolerated: BTreeMap<String, BTreeSet<String>>,
}

/// An import found in the code.
#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
}

/// Runs the check from the repository root; `Ok` holds the report, `Err` the failures.
pub fn run(root: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(root.join(TABLE))
        .map_err(|e| format!("layering: cannot read {TABLE}: {e}\n"))?;
    let tables = parse_table(&text)?;
    let mut report = String::new();
    let mut failures = String::new();
    for table in &tables {
        check_crate(root, table, &mut report, &mut failures);
    }
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(failures)
    }
}

fn parse_table(text: &str) -> Result<Vec<Table>, String> {
    let mut tables: Vec<Table> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let where_ = format!("{TABLE}:{}", n + 1);
        if let Some(src) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            tables.push(Table {
                src: src.trim().to_string(),
                ..Table::default()
            });
            continue;
        }
        let table = tables
            .last_mut()
            .ok_or_else(|| format!("{where_}: a module line before any [crate/src] header\n"))?;
        let (module, deps) = line
            .split_once(':')
            .ok_or_else(|| format!("{where_}: expected `module: imports…`\n"))?;
        let module = module.trim().to_string();
        if table.allowed.contains_key(&module) {
            return Err(format!("{where_}: {module} is listed twice\n"));
        }
        let mut allowed = BTreeSet::new();
        let mut tolerated = BTreeSet::new();
        for dep in deps.split_whitespace() {
            match dep.strip_suffix('!') {
                Some(up) => {
                    tolerated.insert(up.to_string());
                }
                None => {
                    if !table.allowed.contains_key(dep) {
                        return Err(format!(
                            "{where_}: {module} may import {dep}, which is not listed above it \
                             (imports point down; mark a known upward edge `{dep}!`)\n"
                        ));
                    }
                    allowed.insert(dep.to_string());
                }
            }
        }
        table.order.push(module.clone());
        table.allowed.insert(module.clone(), allowed);
        table.tolerated.insert(module, tolerated);
    }
    Ok(tables)
}

fn check_crate(root: &Path, table: &Table, report: &mut String, failures: &mut String) {
    let src = root.join(&table.src);
    let mut files = Vec::new();
    collect_files(&src, &mut files);
    files.sort();
    let modules = top_modules(&src);
    let mut seen_tolerated: BTreeSet<(String, String)> = BTreeSet::new();
    let mut seen_allowed: BTreeSet<(String, String)> = BTreeSet::new();
    let mut edges = 0usize;
    for module in &modules {
        if !table.allowed.contains_key(module) {
            let _ = writeln!(
                failures,
                "{}: module `{module}` is not in {TABLE}: add it at its layer",
                table.src
            );
        }
    }
    for file in &files {
        let Ok(rel) = file.strip_prefix(&src) else {
            continue;
        };
        let Some(from) = module_of(rel) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            let _ = writeln!(failures, "{}: unreadable", file.display());
            continue;
        };
        let text = super_as_crate(&text, module_depth(rel));
        for edge in imports(&text, &from, &modules, &root_relative(root, file)) {
            edges += 1;
            let allowed = table.allowed.get(&edge.from);
            let tolerated = table.tolerated.get(&edge.from);
            if allowed.is_some_and(|a| a.contains(&edge.to)) {
                seen_allowed.insert((edge.from.clone(), edge.to.clone()));
                continue;
            }
            if tolerated.is_some_and(|t| t.contains(&edge.to)) {
                seen_tolerated.insert((edge.from.clone(), edge.to.clone()));
                continue;
            }
            if allowed.is_none() {
                continue; // reported above as missing from the table
            }
            let may: Vec<&str> = allowed.into_iter().flatten().map(String::as_str).collect();
            let _ = writeln!(
                failures,
                "{}:{}: `{}` imports `{}`, which is not allowed (it may import: {})",
                edge.file.display(),
                edge.line,
                edge.from,
                edge.to,
                if may.is_empty() {
                    "nothing".to_string()
                } else {
                    may.join(", ")
                }
            );
        }
    }
    let mut remaining = Vec::new();
    for (from, tos) in &table.tolerated {
        for to in tos {
            if seen_tolerated.contains(&(from.clone(), to.clone())) {
                remaining.push(format!("{from} → {to}"));
            } else {
                let _ = writeln!(
                    failures,
                    "{TABLE}: the upward edge {from} → {to} is gone: remove `{to}!` from {from}'s line"
                );
            }
        }
    }
    let unused: Vec<String> = table
        .allowed
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from, to)))
        .filter(|(from, to)| !seen_allowed.contains(&((*from).clone(), (*to).clone())))
        .map(|(from, to)| format!("{from} → {to}"))
        .collect();
    if !unused.is_empty() {
        let _ = writeln!(
            report,
            "layering: {}: allowed but unused (could be dropped): {}",
            table.src,
            unused.join(", ")
        );
    }
    let _ = writeln!(
        report,
        "layering: {}: {} modules, {} files, {} imports checked; {} known upward edges left{}{}",
        table.src,
        table.order.len(),
        files.len(),
        edges,
        remaining.len(),
        if remaining.is_empty() { "" } else { ": " },
        remaining.join(", ")
    );
}

fn root_relative(root: &Path, file: &Path) -> PathBuf {
    file.strip_prefix(root).unwrap_or(file).to_path_buf()
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The crate's top-level modules: `src/x.rs` and `src/x/`, less the crate roots.
fn top_modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(src) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && !matches!(stem, "lib" | "main")
        {
            out.insert(stem.to_string());
        }
    }
    out
}

/// The top-level module a file (relative to `src/`) belongs to; `None` for the crate root.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .to_string();
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first),
    }
}

/// How deep a file's module sits below the crate root: `a.rs` and `a/mod.rs` are 1,
/// `a/b.rs` is 2.
fn module_depth(rel: &Path) -> usize {
    let parts = rel.components().count();
    match rel.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") => parts - 1,
        _ => parts,
    }
}

/// The file's text with the `super::` chains that reach the crate root (`depth` of them)
/// written as `crate::`, so that `use super::podutil` in a top-level module counts as the
/// edge it is.
fn super_as_crate(text: &str, depth: usize) -> String {
    if depth == 0 {
        return text.to_string();
    }
    let chain = "super::".repeat(depth);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(&chain) {
        out.push_str(&rest[..pos]);
        let before = out.chars().next_back();
        let after = &rest[pos + chain.len()..];
        let joined = before.is_some_and(|c| c == '_' || c == ':' || c.is_alphanumeric())
            || after.starts_with("super::");
        out.push_str(if joined { &chain } else { "crate::" });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The `crate::<module>` imports of a file of `from`, one per module per line.
fn imports(text: &str, from: &str, modules: &BTreeSet<String>, file: &Path) -> Vec<Edge> {
    let code = drop_test_items(&strip_comments_and_strings(text));
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while let Some(pos) = code[i..].find("crate::") {
        let at = i + pos;
        i = at + "crate::".len();
        let before = at.checked_sub(1).map(|b| bytes[b]);
        if before.is_some_and(|b| b == b'$' || b == b'_' || b.is_ascii_alphanumeric()) {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        for name in names_after(&code[i..]) {
            if name != from && modules.contains(&name) {
                out.push(Edge {
                    from: from.to_string(),
                    to: name,
                    file: file.to_path_buf(),
                    line,
                });
            }
        }
    }
    out.dedup_by(|a, b| a.to == b.to && a.line == b.line);
    out
}

/// The first path segments after `crate::`: one identifier, or those of a `{…}` group.
fn names_after(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut at_segment_start = true;
    for (idx, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_segment_start = true,
            c if c.is_whitespace() => {}
            _ if at_segment_start && depth == 0 => {
                names.push(ident(&group[idx..]));
                at_segment_start = false;
            }
            _ => {}
        }
    }
    names
}

/// The code with comments removed and string and char literals emptied, lines kept.
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let n = chars.len();
    while i < n {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < n {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth = depth.saturating_sub(1);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
            continue;
        }
        if c == 'r' && matches!(next, Some('"' | '#')) && !prev_is_ident(&chars, i) {
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                j += 1;
                out.push_str("\"\"");
                'raw: while j < n {
                    if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break 'raw;
                    }
                    if chars[j] == '\n' {
                        out.push('\n');
                    }
                    j += 1;
                }
                i = j;
                continue;
            }
        }
        if c == '"' {
            out.push_str("\"\"");
            i += 1;
            while i < n && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        if c == '\'' {
            // A char literal ('a', '\n', '\''), not a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < n && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `code` without the items under `#[cfg(test)]` (a test module, a test-only function or
/// `use`), newlines kept so that line numbers stay right.
fn drop_test_items(code: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '#' && at_line_start(&chars, i) && starts_with(&chars, i, ATTR) {
            // Skip to the end of the item: its `;`, or its `{…}` block.
            let mut j = i + ATTR.chars().count();
            let mut depth = 0usize;
            while j < chars.len() {
                match chars[j] {
                    '\n' => out.push('\n'),
                    ';' if depth == 0 => break,
                    '{' => depth += 1,
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i.checked_sub(1)
        .and_then(|p| chars.get(p))
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
}

fn at_line_start(chars: &[char], i: usize) -> bool {
    chars[..i]
        .iter()
        .rev()
        .take_while(|c| **c != '\n')
        .all(|c| c.is_whitespace())
}

fn starts_with(chars: &[char], i: usize, word: &str) -> bool {
    word.chars()
        .enumerate()
        .all(|(k, w)| chars.get(i + k) == Some(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mods(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_paths_groups_and_nested_groups_but_not_comments_or_strings() {
        let code = r#"
use crate::storage::Store;
use crate::{http, registry::{Api, Target}};
// crate::audit in a comment
/// [`crate::authz`] in a doc link
let s = "crate::authn in a string";
let t = $crate::object::x;
fn f() { crate::status::ok() }
#[cfg(test)]
mod tests { use crate::table; fn g() { crate::table::x(); } }
#[cfg(test)]
use crate::table::Test;
use crate::audit::After;
"#;
        let edges = imports(
            code,
            "server",
            &mods(&[
                "storage", "http", "registry", "audit", "authz", "authn", "object", "status",
                "table",
            ]),
            Path::new("x.rs"),
        );
        let found: Vec<(&str, usize)> = edges.iter().map(|e| (e.to.as_str(), e.line)).collect();
        assert_eq!(
            found,
            vec![
                ("storage", 2),
                ("http", 3),
                ("registry", 3),
                ("status", 8),
                ("audit", 13)
            ]
        );
    }

    #[test]
    fn super_chains_that_reach_the_root_count_as_crate_paths() {
        assert_eq!(module_depth(Path::new("a.rs")), 1);
        assert_eq!(module_depth(Path::new("a/mod.rs")), 1);
        assert_eq!(module_depth(Path::new("a/b.rs")), 2);
        assert_eq!(
            super_as_crate("use super::x;\nuse super::super::y;", 1),
            "use crate::x;\nuse super::super::y;"
        );
        assert_eq!(
            super_as_crate("use super::super::y; use super::z;", 2),
            "use crate::y; use super::z;"
        );
    }

    #[test]
    fn the_table_allows_only_downward_edges_unless_marked() {
        let ok = parse_table("[src]\nstorage:\nhttp: storage\nregistry: storage http!\n");
        let tables = ok.unwrap_or_default();
        assert_eq!(tables[0].order, vec!["storage", "http", "registry"]);
        assert!(tables[0].tolerated["registry"].contains("http"));
        let upward = parse_table("[src]\nstorage: http\nhttp:\n");
        assert!(upward.is_err_and(|e| e.contains("not listed above it")));
    }

    /// A real tree: `use crate::http` added in storage/ fails the check, naming
    /// the file and line; the same tree without it passes.
    #[test]
    fn an_upward_import_in_a_tree_is_refused_with_its_file() {
        let root = std::env::temp_dir().join(format!("kopr-layering-{}", std::process::id()));
        let src = root.join("crates/demo/src");
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).ok();
            }
            std::fs::write(path, text).ok();
        };
        write(TABLE, "[crates/demo/src]\nstorage:\nhttp: storage\n");
        write("crates/demo/src/lib.rs", "mod http;\nmod storage;\n");
        write(
            "crates/demo/src/http/mod.rs",
            "use crate::storage::Store;\n",
        );
        write("crates/demo/src/storage/mod.rs", "pub struct Store;\n");
        assert!(src.exists());
        assert!(run(&root).is_ok());
        write(
            "crates/demo/src/storage/mod.rs",
            "pub struct Store;\nuse crate::http;\n",
        );
        let failures = run(&root).err().unwrap_or_default();
        std::fs::remove_dir_all(&root).ok();
        assert!(
            failures.contains("crates/demo/src/storage/mod.rs:2: `storage` imports `http`"),
            "{failures}"
        );
    }
}
