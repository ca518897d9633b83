//! Text filters of the simulated container's command set, for pipelines
//! such as `env | sort | grep X`: `head`, `tail` (`-n N`, `-N`, `-c +N`,
//! `-c N`), `sort` (`-r`), `wc` (`-l`, `-w`, `-c`) and `grep` (fixed
//! substrings or `^`/`$` anchors; `-v`, `-i`, `-c`, `-q`). Each works on
//! its whole input and returns the output and exit status, or a usage
//! error for stderr.

/// A filter's usage error, as the program writes it to stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// An option without its argument (the program, the option letter).
    #[error("{program}: option requires an argument -- '{option}'")]
    MissingArgument {
        /// `head` or `tail`.
        program: String,
        /// `n` or `c`.
        option: String,
    },
    /// A count that is not a number.
    #[error("{program}: invalid number of lines: '{count}'")]
    InvalidCount {
        /// `head` or `tail`.
        program: String,
        /// The count as given.
        count: String,
    },
    /// `grep` without a pattern.
    #[error("Usage: grep [OPTION]... PATTERNS [FILE]...")]
    GrepPattern,
}

/// What a filter produced.
pub struct Filtered {
    /// Standard output.
    pub out: Vec<u8>,
    /// Exit status.
    pub code: i32,
}

fn lines(input: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if input.ends_with(b"\n") {
        v.pop();
    }
    v
}

fn join(lines: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

/// Reads a count option (`-n N`, `-nN`, `-N`, `-c N`); returns lines or
/// bytes, the number and whether it counts from the start (`+N`).
fn count(name: &str, args: &[String]) -> Result<(bool, String, Vec<String>), UsageError> {
    let mut bytes = false;
    let mut n = "10".to_string();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-n" || a == "-c" {
            bytes = a == "-c";
            n = it
                .next()
                .cloned()
                .ok_or_else(|| UsageError::MissingArgument {
                    program: name.to_string(),
                    option: a[1..].to_string(),
                })?;
        } else if let Some(v) = a.strip_prefix("-n").or_else(|| a.strip_prefix("-c")) {
            bytes = a.starts_with("-c");
            n = v.to_string();
        } else if a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) {
            n = a[1..].to_string();
        } else {
            rest.push(a.clone());
        }
    }
    Ok((bytes, n, rest))
}

/// `head` and `tail`.
///
/// # Errors
/// A usage error.
pub fn head_tail(name: &str, args: &[String], input: &[u8]) -> Result<Filtered, UsageError> {
    let (bytes, n, _) = count(name, args)?;
    let from_start = n.starts_with('+');
    let k: usize = match n.trim_start_matches('+').parse() {
        Ok(k) => k,
        Err(_) => {
            return Err(UsageError::InvalidCount {
                program: name.to_string(),
                count: n,
            });
        }
    };
    let out = if bytes {
        match (name, from_start) {
            ("head", _) => input[..k.min(input.len())].to_vec(),
            (_, true) => input[k.saturating_sub(1).min(input.len())..].to_vec(),
            _ => input[input.len().saturating_sub(k)..].to_vec(),
        }
    } else {
        let ls = lines(input);
        match (name, from_start) {
            ("head", _) => join(&ls[..k.min(ls.len())]),
            (_, true) => join(&ls[k.saturating_sub(1).min(ls.len())..]),
            _ => join(&ls[ls.len().saturating_sub(k)..]),
        }
    };
    Ok(Filtered { out, code: 0 })
}

/// `sort`.
pub fn sort(args: &[String], input: &[u8]) -> Filtered {
    let mut ls = lines(input);
    ls.sort();
    if args.iter().any(|a| a == "-r") {
        ls.reverse();
    }
    Filtered {
        out: join(&ls),
        code: 0,
    }
}

/// `wc`.
pub fn wc(args: &[String], input: &[u8]) -> Filtered {
    let l = input.iter().filter(|b| **b == b'\n').count();
    let w = input
        .split(|b| b.is_ascii_whitespace())
        .filter(|s| !s.is_empty())
        .count();
    let c = input.len();
    let flags: String = args
        .iter()
        .filter(|a| a.starts_with('-'))
        .map(|a| &a[1..])
        .collect();
    let text = match flags.as_str() {
        "l" => format!("{l}\n"),
        "w" => format!("{w}\n"),
        "c" => format!("{c}\n"),
        _ => format!("{l:>7} {w:>7} {c:>7}\n"),
    };
    Filtered {
        out: text.into_bytes(),
        code: 0,
    }
}

/// `grep PATTERN`.
///
/// # Errors
/// A usage error.
pub fn grep(args: &[String], input: &[u8]) -> Result<Filtered, UsageError> {
    let (mut invert, mut ignore, mut count_only, mut quiet) = (false, false, false, false);
    let mut pattern = None;
    for a in args {
        match a.as_str() {
            "-v" => invert = true,
            "-i" => ignore = true,
            "-c" => count_only = true,
            "-q" => quiet = true,
            "-F" | "-E" => {}
            p if pattern.is_none() => pattern = Some(p.to_string()),
            _ => {}
        }
    }
    let Some(mut pattern) = pattern else {
        return Err(UsageError::GrepPattern);
    };
    let start = pattern.starts_with('^');
    let end = pattern.ends_with('$') && pattern.len() > usize::from(start);
    if start {
        pattern.remove(0);
    }
    if end {
        pattern.pop();
    }
    let norm = |s: &str| {
        if ignore {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let pat = norm(&pattern);
    let hits: Vec<&[u8]> = lines(input)
        .into_iter()
        .filter(|l| {
            let text = norm(&String::from_utf8_lossy(l));
            let m = match (start, end) {
                (true, true) => text == pat,
                (true, false) => text.starts_with(&pat),
                (false, true) => text.ends_with(&pat),
                _ => text.contains(&pat),
            };
            m != invert
        })
        .collect();
    let code = i32::from(hits.is_empty());
    let out = if quiet {
        Vec::new()
    } else if count_only {
        format!("{}\n", hits.len()).into_bytes()
    } else {
        join(&hits)
    };
    Ok(Filtered { out, code })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn filters() {
        let input = b"b=2\na=1\nc=3\n";
        assert_eq!(sort(&[], input).out, b"a=1\nb=2\nc=3\n");
        assert_eq!(
            head_tail("head", &s(&["-n", "1"]), input).unwrap().out,
            b"b=2\n"
        );
        assert_eq!(head_tail("tail", &s(&["-1"]), input).unwrap().out, b"c=3\n");
        assert_eq!(
            head_tail("tail", &s(&["-c+5"]), input).unwrap().out,
            b"a=1\nc=3\n"
        );
        assert_eq!(wc(&s(&["-l"]), input).out, b"3\n");
        let g = grep(&s(&["^a"]), input).unwrap();
        assert_eq!((g.out, g.code), (b"a=1\n".to_vec(), 0));
        assert_eq!(grep(&s(&["x"]), input).unwrap().code, 1);
        let usage = |r: Result<Filtered, UsageError>| r.err().map(|e| e.to_string());
        assert_eq!(
            usage(head_tail("head", &s(&["-n"]), input)).as_deref(),
            Some("head: option requires an argument -- 'n'")
        );
        assert_eq!(
            usage(head_tail("tail", &s(&["-n", "x"]), input)).as_deref(),
            Some("tail: invalid number of lines: 'x'")
        );
        assert_eq!(
            usage(grep(&[], input)).as_deref(),
            Some("Usage: grep [OPTION]... PATTERNS [FILE]...")
        );
    }
}
