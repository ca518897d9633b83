//! `docs`: checks that every `{{#include path[:anchor]}}` of the guide (`docs/src/*.md`)
//! names a file that exists and, with an anchor, one that holds `ANCHOR: name` and
//! `ANCHOR_END: name` — mdBook itself includes nothing, silently, for a missing anchor. The
//! included code is the examples' and tests', which the test command builds and runs.
//! The README cannot include: a code block after a `<!-- file: PATH -->` line must be
//! PATH's text, so the code it shows is code the test command builds.

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
    let readme = root.join("README.md");
    let copies = match std::fs::read_to_string(&readme) {
        Ok(text) => readme_copies(root, &text, &mut failures),
        Err(e) => {
            failures.push_str(&format!("docs: {}: {e}\n", readme.display()));
            0
        }
    };
    if failures.is_empty() {
        Ok(format!(
            "docs: {} pages, {checked} includes checked; README: {copies} code blocks match their files\n",
            entries.len()
        ))
    } else {
        Err(failures)
    }
}

/// Checks each README code block marked `<!-- file: PATH -->` against PATH; returns how
/// many it checked, adding a line to `failures` for each that differs.
fn readme_copies(root: &Path, text: &str, failures: &mut String) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut checked = 0;
    for (number, line) in lines.iter().enumerate() {
        let Some(path) = line
            .trim()
            .strip_prefix("<!-- file:")
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(str::trim)
        else {
            continue;
        };
        checked += 1;
        let fence = lines.get(number + 1).is_some_and(|l| l.starts_with("```"));
        let end = lines
            .iter()
            .skip(number + 2)
            .position(|l| l.starts_with("```"))
            .map(|offset| number + 2 + offset);
        let (true, Some(end)) = (fence, end) else {
            failures.push_str(&format!(
                "README.md:{}: no code block after the file marker\n",
                number + 1
            ));
            continue;
        };
        let shown = lines[number + 2..end].join("\n");
        match std::fs::read_to_string(root.join(path)) {
            Ok(file) if file.trim_end() == shown.trim_end() => {}
            Ok(_) => failures.push_str(&format!(
                "README.md:{}: the code block differs from {path}\n",
                number + 1
            )),
            Err(e) => failures.push_str(&format!("README.md:{}: {path}: {e}\n", number + 1)),
        }
    }
    checked
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

    #[test]
    fn a_readme_block_must_be_its_file() {
        let dir = std::env::temp_dir().join(format!("xtask-readme-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.rs"), "fn a() {}\n").unwrap();
        let readme = "<!-- file: a.rs -->\n```rust\nfn a() {}\n```\n\n<!-- file: a.rs -->\n```rust\nfn b() {}\n```\n<!-- file: a.rs -->\ntext\n";
        let mut failures = String::new();
        assert_eq!(readme_copies(&dir, readme, &mut failures), 3);
        assert!(!failures.contains("README.md:1:"), "{failures}");
        assert!(
            failures.contains("README.md:6: the code block differs from a.rs"),
            "{failures}"
        );
        assert!(
            failures.contains("README.md:10: no code block after the file marker"),
            "{failures}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
