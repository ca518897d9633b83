//! Locating tokens in a rule's text, for cel-go's `<input>:L:C` error positions.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Locating tokens for error positions.
// ---------------------------------------------------------------------------

/// A token of the source: its text and its 1-based (line, column).
pub(super) struct Tok {
    pub(super) text: String,
    pub(super) line: isize,
    pub(super) col: isize,
}

/// Splits a CEL source into identifier and punctuation tokens, skipping
/// string literals, numbers and comments.
pub(super) fn tokens(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1isize, 1isize);
    let advance = |i: &mut usize, line: &mut isize, col: &mut isize, chars: &[char]| {
        if chars.get(*i) == Some(&'\n') {
            *line += 1;
            *col = 1;
        } else {
            *col += 1;
        }
        *i += 1;
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c == '"' || c == '\'' {
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let raw = i > 0 && matches!(chars[i - 1], 'r' | 'R');
            let n = if triple { 3 } else { 1 };
            for _ in 0..n {
                advance(&mut i, &mut line, &mut col, &chars);
            }
            while i < chars.len() {
                if chars[i] == '\\' && !raw {
                    advance(&mut i, &mut line, &mut col, &chars);
                    advance(&mut i, &mut line, &mut col, &chars);
                    continue;
                }
                if chars[i] == c
                    && (!triple || (chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c)))
                {
                    for _ in 0..n {
                        advance(&mut i, &mut line, &mut col, &chars);
                    }
                    break;
                }
                if !triple && chars[i] == '\n' {
                    break;
                }
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let (l, cc) = (line, col);
            let mut text = String::new();
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                text.push(chars[i]);
                advance(&mut i, &mut line, &mut col, &chars);
            }
            // String prefixes (r'', b'') are not identifiers.
            if matches!(chars.get(i), Some('"' | '\''))
                && matches!(
                    text.as_str(),
                    "r" | "R" | "b" | "B" | "rb" | "br" | "RB" | "BR"
                )
            {
                continue;
            }
            out.push(Tok {
                text,
                line: l,
                col: cc,
            });
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, &chars);
        } else {
            let (l, cc) = (line, col);
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let text = if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two.as_str()) {
                advance(&mut i, &mut line, &mut col, &chars);
                two
            } else {
                c.to_string()
            };
            advance(&mut i, &mut line, &mut col, &chars);
            out.push(Tok {
                text,
                line: l,
                col: cc,
            });
        }
    }
    out
}

pub(super) fn locate_ident(src: &str, name: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    toks.iter()
        .enumerate()
        .find(|(i, t)| {
            t.text == name && (*i == 0 || !matches!(toks[i - 1].text.as_str(), "." | "?"))
        })
        .map(|(_, t)| (t.line, t.col))
}

pub(super) fn locate_select(src: &str, field: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    for (i, t) in toks.iter().enumerate() {
        if t.text != "." {
            continue;
        }
        let next = match toks.get(i + 1) {
            Some(n) if n.text == "?" => toks.get(i + 2),
            n => n,
        };
        if next.is_some_and(|n| n.text == field) {
            return Some((t.line, t.col));
        }
    }
    None
}

pub(super) fn locate_call(src: &str, name: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    toks.iter()
        .enumerate()
        .find(|(i, t)| t.text == name && toks.get(i + 1).is_some_and(|n| n.text == "("))
        .and_then(|(i, _)| toks.get(i + 1))
        .map(|t| (t.line, t.col))
}

pub(super) fn locate_op(src: &str, op: &str) -> Option<(isize, isize)> {
    tokens(src)
        .into_iter()
        .find(|t| t.text == op)
        .map(|t| (t.line, t.col))
}

/// The position of the first non-blank character after the one at
/// (`line`, `col`), e.g. the first argument after a call's `(`.
pub(super) fn first_after(src: &str, line: isize, col: isize) -> (isize, isize) {
    let (mut l, mut c) = (1isize, 1isize);
    let mut passed = false;
    for ch in src.chars() {
        if passed && !ch.is_whitespace() {
            return (l, c);
        }
        if l == line && c == col {
            passed = true;
        }
        if ch == '\n' {
            l += 1;
            c = 1;
        } else {
            c += 1;
        }
    }
    (line, col)
}

/// The position of the element of the `n`-th (0-based) optional list
/// element or map entry (`[?e]`, `{?k: v}`): the first character after its
/// `?` marker.
pub(super) fn locate_optional_entry(src: &str, n: usize) -> Option<(isize, isize)> {
    let toks = tokens(src);
    let mut seen = 0;
    for (i, t) in toks.iter().enumerate() {
        if t.text != "?" || i == 0 {
            continue;
        }
        let prev = toks[i - 1].text.as_str();
        let marker = match prev {
            "{" | "," => true,
            // `[?` opens a list literal unless it indexes an operand.
            "[" => {
                i < 2 || {
                    let before = toks[i - 2].text.as_str();
                    !(before == ")"
                        || before == "]"
                        || before.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
                }
            }
            _ => false,
        };
        if !marker {
            continue;
        }
        if seen == n {
            return Some(first_after(src, t.line, t.col));
        }
        seen += 1;
    }
    None
}
