//! `tar` for simulated containers, enough for `kubectl cp` both ways:
//! `tar cf - PATH` writes a GNU-format archive of a file or directory of
//! the container's tree to stdout (member names lose their leading `/`,
//! with GNU tar's notice on stderr), and `tar xmf - -C DIR` (also with
//! `--no-same-permissions --no-same-owner`) unpacks an archive from stdin
//! into the tree. `t` lists members. Errors use GNU tar's words and exit
//! status 2.

use super::files::{Fs, FsError, Node, components, join};

/// What a `tar` run asks for.
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    /// `c`, `x` or `t`.
    pub mode: Option<char>,
    /// `-f` (`-` is stdin or stdout).
    pub file: Option<String>,
    /// `-C`.
    pub dir: Option<String>,
    /// `m`: do not restore modification times.
    pub touch: bool,
    /// `v`.
    pub verbose: bool,
    /// `z`, `j`, `J`: compression, which the simulated tar lacks.
    pub compress: Option<char>,
    /// Member paths.
    pub paths: Vec<String>,
}

/// Why tar's arguments do not parse; the messages are GNU tar's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// A long option without its argument (its name).
    #[error("tar: option '--{0}' requires an argument")]
    LongArgument(String),
    /// An unknown long option (as given, with any `=value`).
    #[error("tar: unrecognized option '--{0}'")]
    UnrecognizedLong(String),
    /// A short option without its argument.
    #[error("tar: option requires an argument -- '{0}'")]
    ShortArgument(char),
    /// An unknown short option.
    #[error("tar: invalid option -- '{0}'")]
    InvalidShort(char),
}

/// Parses tar's arguments (old-style bundled first argument, `-xyz`
/// bundles, long options).
///
/// # Errors
/// An unknown option or a missing argument.
pub fn parse(args: &[String]) -> Result<Options, OptionError> {
    let mut o = Options::default();
    let mut it = args.iter().peekable();
    let mut first = true;
    while let Some(arg) = it.next() {
        let bundle: Option<&str> = if first && !arg.starts_with('-') && !arg.is_empty() {
            Some(arg)
        } else if let Some(rest) = arg.strip_prefix("--") {
            let (name, value) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (rest, None),
            };
            match name {
                "no-same-permissions"
                | "no-same-owner"
                | "overwrite"
                | "same-owner"
                | "preserve-permissions"
                | "same-permissions" => {}
                "touch" => o.touch = true,
                "verbose" => o.verbose = true,
                "create" => o.mode = Some('c'),
                "extract" | "get" => o.mode = Some('x'),
                "list" => o.mode = Some('t'),
                "file" | "directory" => {
                    let v = match value {
                        Some(v) => v,
                        None => it
                            .next()
                            .cloned()
                            .ok_or_else(|| OptionError::LongArgument(name.to_string()))?,
                    };
                    if name == "file" {
                        o.file = Some(v);
                    } else {
                        o.dir = Some(v);
                    }
                }
                _ => return Err(OptionError::UnrecognizedLong(rest.to_string())),
            }
            None
        } else if let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) {
            Some(flags)
        } else {
            o.paths.push(arg.clone());
            None
        };
        first = false;
        if let Some(flags) = bundle {
            for c in flags.chars() {
                match c {
                    'c' | 'x' | 't' => o.mode = Some(c),
                    'f' | 'C' => {
                        let v = it.next().cloned().ok_or(OptionError::ShortArgument(c))?;
                        if c == 'f' {
                            o.file = Some(v);
                        } else {
                            o.dir = Some(v);
                        }
                    }
                    'm' => o.touch = true,
                    'v' => o.verbose = true,
                    'p' | 'o' => {}
                    'z' | 'j' | 'J' => o.compress = Some(c),
                    other => return Err(OptionError::InvalidShort(other)),
                }
            }
        }
    }
    Ok(o)
}

/// An archive written: its bytes, the notices for stderr, and whether
/// tar fails.
pub struct Created {
    /// The archive.
    pub archive: Vec<u8>,
    /// Lines for stderr.
    pub notices: Vec<String>,
    /// Whether some member could not be archived (exit status 2).
    pub failed: bool,
}

fn header(kind: tar::EntryType, size: u64, mode: u32, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(mtime);
    h.set_uid(0);
    h.set_gid(0);
    let _ = h.set_username("root");
    let _ = h.set_groupname("root");
    h
}

fn append(b: &mut tar::Builder<Vec<u8>>, name: &str, node: &Node) -> std::io::Result<()> {
    match node {
        Node::File { data, mode, mtime } => {
            let mut h = header(tar::EntryType::Regular, data.len() as u64, *mode, *mtime);
            b.append_data(&mut h, name, data.as_slice())
        }
        Node::Dir {
            entries,
            mode,
            mtime,
            ..
        } => {
            let mut h = header(tar::EntryType::Directory, 0, *mode, *mtime);
            b.append_data(&mut h, format!("{name}/"), std::io::empty())?;
            for (child, n) in entries {
                append(b, &format!("{name}/{child}"), n)?;
            }
            Ok(())
        }
    }
}

/// `tar c`: an archive of `paths` (relative to `cwd`).
pub fn create(fs: &Fs, cwd: &str, paths: &[String]) -> Created {
    let mut b = tar::Builder::new(Vec::new());
    let mut notices = Vec::new();
    let mut failed = false;
    let mut warned = false;
    if paths.is_empty() {
        notices.push("tar: Cowardly refusing to create an empty archive".to_string());
        return Created {
            archive: Vec::new(),
            notices,
            failed: true,
        };
    }
    for p in paths {
        let comps = components(cwd, p);
        let node = match fs.get(&comps) {
            Ok(n) => n,
            Err(e) => {
                notices.push(format!("tar: {p}: Cannot stat: {e}"));
                failed = true;
                continue;
            }
        };
        // The member name as given, without leading `/` (GNU tar strips it).
        let trimmed = p.trim_start_matches('/');
        if trimmed.len() != p.len() && !warned {
            notices.push("tar: Removing leading `/' from member names".to_string());
            warned = true;
        }
        let name = trimmed.trim_end_matches('/');
        let name = if name.is_empty() { "." } else { name };
        if append(&mut b, name, node).is_err() {
            failed = true;
        }
    }
    if failed {
        notices.push("tar: Exiting with failure status due to previous errors".to_string());
    }
    let archive = b.into_inner().unwrap_or_default();
    Created {
        archive,
        notices,
        failed,
    }
}

/// `tar x`: unpacks `archive` into the directory `dir` (relative to
/// `cwd`). Returns the members' names (for `v`).
///
/// # Errors
/// GNU tar's messages; tar exits with status 2.
pub fn extract(
    fs: &mut Fs,
    cwd: &str,
    dir: &str,
    archive: &[u8],
    touch: bool,
) -> Result<Vec<String>, Vec<String>> {
    let base = components(cwd, dir);
    match fs.get(&base) {
        Ok(n) if n.is_dir() => {}
        Ok(_) => {
            return Err(vec![
                format!("tar: {dir}: Cannot open: {}", FsError::NotDir),
                "tar: Error is not recoverable: exiting now".to_string(),
            ]);
        }
        Err(e) => {
            return Err(vec![
                format!("tar: {dir}: Cannot open: {e}"),
                "tar: Error is not recoverable: exiting now".to_string(),
            ]);
        }
    }
    let mut names = Vec::new();
    let mut errors = Vec::new();
    let mut a = tar::Archive::new(archive);
    let entries = match a.entries() {
        Ok(e) => e,
        Err(_) => return Err(not_an_archive()),
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(_) if names.is_empty() && errors.is_empty() => return Err(not_an_archive()),
            Err(_) => {
                errors.push("tar: Unexpected EOF in archive".to_string());
                break;
            }
        };
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        // Members never leave the target directory (GNU tar drops `..`
        // and leading `/`).
        let rel: Vec<String> = components("/", &raw);
        let mut comps = base.clone();
        comps.extend(rel);
        let mode = entry.header().mode().ok();
        let mtime = entry.header().mtime().unwrap_or(0);
        let kind = entry.header().entry_type();
        let result = if kind.is_dir() {
            fs.mkdir(&comps, true)
        } else if kind.is_file() {
            let mut data = Vec::new();
            if std::io::Read::read_to_end(&mut entry, &mut data).is_err() {
                errors.push("tar: Unexpected EOF in archive".to_string());
                break;
            }
            let parent_ok = match comps.split_last() {
                Some((_, parent)) => fs.mkdir(parent, true),
                None => Err(FsError::IsDir),
            };
            parent_ok.and_then(|()| fs.write(&comps, &data, false, mode.unwrap_or(0o644)))
        } else {
            // Links, devices and the like are not simulated.
            Ok(())
        };
        match result {
            Ok(()) => {
                if !touch {
                    fs.set_meta(&comps, mode, mtime);
                }
                names.push(raw);
            }
            Err(e) => errors.push(format!(
                "tar: {}: Cannot open: {e}",
                raw.trim_end_matches('/')
            )),
        }
    }
    if errors.is_empty() {
        Ok(names)
    } else {
        errors.push("tar: Exiting with failure status due to previous errors".to_string());
        Err(errors)
    }
}

fn not_an_archive() -> Vec<String> {
    vec![
        "tar: This does not look like a tar archive".to_string(),
        "tar: Exiting with failure status due to previous errors".to_string(),
    ]
}

/// `tar t`: the member names of an archive.
pub fn list(archive: &[u8]) -> Result<Vec<String>, Vec<String>> {
    let mut a = tar::Archive::new(archive);
    let entries = a.entries().map_err(|_| not_an_archive())?;
    let mut names = Vec::new();
    for e in entries {
        match e {
            Ok(e) => names.push(String::from_utf8_lossy(&e.path_bytes()).into_owned()),
            Err(_) => return Err(not_an_archive()),
        }
    }
    Ok(names)
}

/// The absolute path of `dir` against `cwd` (for messages).
pub fn absolute(cwd: &str, dir: &str) -> String {
    join(&components(cwd, dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_kubectl_cp_commands() {
        let o = parse(&s(&["cf", "-", "/tmp/x"])).unwrap();
        assert_eq!(
            (o.mode, o.file.as_deref(), o.paths.clone()),
            (Some('c'), Some("-"), s(&["/tmp/x"]))
        );
        let o = parse(&s(&["-xmf", "-", "-C", "/tmp"])).unwrap();
        assert_eq!(
            (o.mode, o.touch, o.dir.as_deref()),
            (Some('x'), true, Some("/tmp"))
        );
        let o = parse(&s(&[
            "--no-same-permissions",
            "--no-same-owner",
            "-xmf",
            "-",
            "-C",
            "/d",
        ]))
        .unwrap();
        assert_eq!((o.mode, o.dir.as_deref()), (Some('x'), Some("/d")));
        let error = |args: &[&str]| parse(&s(args)).err().map(|e| e.to_string());
        assert_eq!(
            error(&["-xq"]).as_deref(),
            Some("tar: invalid option -- 'q'")
        );
        assert_eq!(
            error(&["-xf"]).as_deref(),
            Some("tar: option requires an argument -- 'f'")
        );
        assert_eq!(
            error(&["-x", "--file"]).as_deref(),
            Some("tar: option '--file' requires an argument")
        );
        assert_eq!(
            error(&["-x", "--bogus=1"]).as_deref(),
            Some("tar: unrecognized option '--bogus=1'")
        );
    }

    #[test]
    fn round_trips_a_directory() {
        let mut fs = Fs::new();
        fs.mkdir(&components("/", "/data/sub"), true).unwrap();
        fs.write(&components("/", "/data/sub/f"), b"hello", false, 0o600)
            .unwrap();
        let c = create(&fs, "/", &s(&["/data"]));
        assert!(!c.failed);
        assert_eq!(c.notices, ["tar: Removing leading `/' from member names"]);
        assert_eq!(
            list(&c.archive).unwrap(),
            ["data/", "data/sub/", "data/sub/f"]
        );
        let mut other = Fs::new();
        extract(&mut other, "/", "/tmp", &c.archive, true).unwrap();
        assert_eq!(
            other.read(&components("/", "/tmp/data/sub/f")).unwrap(),
            b"hello"
        );
        let missing = extract(&mut other, "/", "/nope", &c.archive, true).unwrap_err();
        assert_eq!(
            missing[0],
            "tar: /nope: Cannot open: No such file or directory"
        );
    }
}
