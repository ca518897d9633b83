//! `docs`: checks that every `{{#include path[:anchor]}}` of the guide (`docs/src/*.md`)
//! names a file that exists and, with an anchor, one that holds `ANCHOR: name` and
//! `ANCHOR_END: name` — mdBook itself includes nothing, silently, for a missing anchor. The
//! included code is the examples' and tests', which the test command builds and runs.

use std::path::Path;

/// Checks the includes of the guide under `root/docs/src`; returns a summary or the failures.
pub fn run(root: &Path) -> Result<String, String> {
    let dir = root.join("docs/src");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("docs: {}: {e}\n", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    entries.sort();
    let (mut checked, mut failures) = (0, String::new());
    for page in &entries {
        let text = std::fs::read_to_string(page)
            .map_err(|e| format!("docs: {}: {e}\n", page.display()))?;
        for (line, include) in includes(&text) {
            checked += 1;
            if let Err(why) = check(page, include) {
                failures.push_str(&format!("{}:{line}: {why}\n", page.display()));
            }
        }
    }
    if failures.is_empty() {
        Ok(format!(
            "docs: {} pages, {checked} includes checked\n",
            entries.len()
        ))
    } else {
        Err(failures)
    }
}

/// The `{{#include …}}` targets of a page, with their line numbers.
fn includes(text: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{#include ") {
            let after = &rest[start + "{{#include ".len()..];
            let Some(end) = after.find("}}") else { break };
            found.push((number + 1, after[..end].trim()));
            rest = &after[end..];
        }
    }
    found
}

/// Whether one include resolves: its file exists, and holds its anchor if it names one.
fn check(page: &Path, include: &str) -> Result<(), String> {
    let (path, anchor) = match include.rsplit_once(':') {
        Some((path, anchor)) if !anchor.is_empty() && !anchor.contains('/') => (path, Some(anchor)),
        _ => (include, None),
    };
    let base = page.parent().unwrap_or(Path::new("."));
    let file = base.join(path);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{path}: {e}"))?;
    if let Some(anchor) = anchor {
        let has = |marker: &str| {
            text.lines().any(|l| {
                l.split_once(marker)
                    .is_some_and(|(_, name)| name.trim() == anchor)
            })
        };
        if !has("ANCHOR: ") || !has("ANCHOR_END: ") {
            return Err(format!("{path}: no ANCHOR/ANCHOR_END named {anchor:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_anchor_or_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("docs/src")).unwrap();
        std::fs::write(
            dir.join("code.rs"),
            "// ANCHOR: good\nfn x() {}\n// ANCHOR_END: good\n",
        )
        .unwrap();
        let page = "{{#include ../../code.rs:good}}\n{{#include ../../code.rs:bad}}\n{{#include ../../none.rs}}\n";
        std::fs::write(dir.join("docs/src/page.md"), page).unwrap();
        let failures = run(&dir).unwrap_err();
        assert!(
            failures.contains("page.md:2: ../../code.rs: no ANCHOR/ANCHOR_END named \"bad\""),
            "{failures}"
        );
        assert!(
            failures.contains("page.md:3: ../../none.rs: "),
            "{failures}"
        );
        assert!(!failures.contains("page.md:1:"), "{failures}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
