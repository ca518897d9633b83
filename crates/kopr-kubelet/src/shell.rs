//! The grammar of the simulated `sh -c`: words with single and double
//! quotes, backslash escapes and `$VAR` / `${VAR}` / `$?` expansion,
//! command lists joined by `;`, newlines, `&&` and `||`, pipelines (`|`),
//! redirections (`>`, `>>`, `<`, `2>`, `2>>`, `2>&1`, `>&2`) and `#`
//! comments. [`super::exec`] runs what this parses.

/// A piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Literal text.
    Lit(String),
    /// A parameter to expand (`?`, a variable name).
    Var(String),
}

/// A word: its pieces, and whether any of it was quoted (a quoted empty
/// word stays a word).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Word {
    /// The pieces.
    pub parts: Vec<Part>,
    /// Whether quotes appeared in it.
    pub quoted: bool,
}

/// A redirection.
#[derive(Debug, Clone, PartialEq)]
pub enum Redirect {
    /// `[fd]> file` or `[fd]>> file` (fd 1 or 2).
    To {
        /// 1 or 2.
        fd: u8,
        /// `>>`.
        append: bool,
        /// The file.
        target: Word,
    },
    /// `< file`.
    From(Word),
    /// `2>&1`
    ErrToOut,
    /// `>&2`
    OutToErr,
}

/// One command with its words and redirections.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Simple {
    /// Words (the first is the command).
    pub words: Vec<Word>,
    /// Redirections, in order.
    pub redirects: Vec<Redirect>,
}

/// When a pipeline of a list runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// Always (first, or after `;` / newline).
    Always,
    /// After `&&`: if the last status was 0.
    IfOk,
    /// After `||`: if the last status was not 0.
    IfFailed,
}

/// A parsed script: pipelines with the condition they run under.
pub type Script = Vec<(When, Vec<Simple>)>;

#[derive(Debug, PartialEq)]
enum Tok {
    Word(Word),
    Semi,
    And,
    Or,
    Pipe,
    Redir(u8, &'static str),
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads `$...` at the start of `chars[i..]` (just after the `$`).
fn dollar(chars: &[char], mut i: usize) -> (Option<Part>, usize) {
    match chars.get(i) {
        Some('{') => {
            let start = i + 1;
            let mut j = start;
            while j < chars.len() && chars[j] != '}' {
                j += 1;
            }
            let name: String = chars[start..j.min(chars.len())].iter().collect();
            (Some(Part::Var(name)), (j + 1).min(chars.len()))
        }
        Some(c) if *c == '?' || *c == '$' || *c == '#' || c.is_ascii_digit() => {
            (Some(Part::Var(c.to_string())), i + 1)
        }
        Some(c) if is_name_char(*c) => {
            let start = i;
            while i < chars.len() && is_name_char(chars[i]) {
                i += 1;
            }
            (Some(Part::Var(chars[start..i].iter().collect())), i)
        }
        _ => (None, i),
    }
}

fn push_lit(parts: &mut Vec<Part>, c: char) {
    match parts.last_mut() {
        Some(Part::Lit(s)) => s.push(c),
        _ => parts.push(Part::Lit(c.to_string())),
    }
}

/// What the grammar does not allow; the messages follow `sh: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// `&` alone: background jobs.
    #[error("syntax error: background jobs (&) are not supported")]
    Background,
    /// A quote without its end.
    #[error("syntax error: unterminated quoted string")]
    Unterminated,
    /// A redirection without its target.
    #[error("syntax error: unexpected redirection")]
    Redirection,
    /// An operator where a command belongs.
    #[error("syntax error: unexpected \"{0}\"")]
    Unexpected(&'static str),
    /// A script that ends after `&&` or `||`.
    #[error("syntax error: unexpected end of file")]
    EndOfFile,
}

fn tokenize(src: &str) -> Result<Vec<Tok>, SyntaxError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut word = Word::default();
    let mut in_word = false;
    let flush = |toks: &mut Vec<Tok>, word: &mut Word, in_word: &mut bool| {
        if *in_word {
            toks.push(Tok::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                flush(&mut toks, &mut word, &mut in_word);
                i += 1;
            }
            '\n' | ';' => {
                flush(&mut toks, &mut word, &mut in_word);
                toks.push(Tok::Semi);
                i += 1;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '&' if chars.get(i + 1) == Some(&'&') => {
                flush(&mut toks, &mut word, &mut in_word);
                toks.push(Tok::And);
                i += 2;
            }
            '|' if chars.get(i + 1) == Some(&'|') => {
                flush(&mut toks, &mut word, &mut in_word);
                toks.push(Tok::Or);
                i += 2;
            }
            '|' => {
                flush(&mut toks, &mut word, &mut in_word);
                toks.push(Tok::Pipe);
                i += 1;
            }
            '&' => return Err(SyntaxError::Background),
            '>' | '<' => {
                // `2>` and friends: a lone digit word before the operator is its fd.
                let mut fd = if c == '>' { 1 } else { 0 };
                if in_word && word.parts == [Part::Lit("2".into())] && !word.quoted {
                    fd = 2;
                    word = Word::default();
                    in_word = false;
                } else if in_word && word.parts == [Part::Lit("1".into())] && !word.quoted {
                    word = Word::default();
                    in_word = false;
                }
                flush(&mut toks, &mut word, &mut in_word);
                let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
                let (op, len) = if rest.starts_with(">&2") {
                    (">&2", 3)
                } else if rest.starts_with(">&1") {
                    (">&1", 3)
                } else if rest.starts_with(">>") {
                    (">>", 2)
                } else if c == '>' {
                    (">", 1)
                } else {
                    ("<", 1)
                };
                toks.push(Tok::Redir(fd, op));
                i += len;
            }
            '\'' => {
                in_word = true;
                word.quoted = true;
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                if j >= chars.len() {
                    return Err(SyntaxError::Unterminated);
                }
                for ch in &chars[start..j] {
                    push_lit(&mut word.parts, *ch);
                }
                if start == j {
                    word.parts.push(Part::Lit(String::new()));
                }
                i = j + 1;
            }
            '"' => {
                in_word = true;
                word.quoted = true;
                i += 1;
                let mut closed = false;
                while i < chars.len() {
                    match chars[i] {
                        '"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        '\\' if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            push_lit(&mut word.parts, chars[i + 1]);
                            i += 2;
                        }
                        '$' => {
                            let (part, next) = dollar(&chars, i + 1);
                            match part {
                                Some(p) => word.parts.push(p),
                                None => push_lit(&mut word.parts, '$'),
                            }
                            i = next;
                        }
                        ch => {
                            push_lit(&mut word.parts, ch);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    return Err(SyntaxError::Unterminated);
                }
            }
            '\\' => {
                in_word = true;
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(ch) => push_lit(&mut word.parts, *ch),
                    None => {}
                }
                i += 2;
            }
            '$' => {
                in_word = true;
                let (part, next) = dollar(&chars, i + 1);
                match part {
                    Some(p) => word.parts.push(p),
                    None => push_lit(&mut word.parts, '$'),
                }
                i = next;
            }
            ch => {
                in_word = true;
                push_lit(&mut word.parts, ch);
                i += 1;
            }
        }
    }
    flush(&mut toks, &mut word, &mut in_word);
    Ok(toks)
}

/// Parses a script.
///
/// # Errors
/// What the grammar does not allow.
pub fn parse(src: &str) -> Result<Script, SyntaxError> {
    let mut script: Script = Vec::new();
    let mut when = When::Always;
    let mut pipeline: Vec<Simple> = Vec::new();
    let mut cmd = Simple::default();
    let mut toks = tokenize(src)?.into_iter().peekable();
    while let Some(t) = toks.next() {
        match t {
            Tok::Word(w) => cmd.words.push(w),
            Tok::Redir(fd, op) => {
                let r = match op {
                    ">&1" if fd == 2 => Redirect::ErrToOut,
                    ">&1" => continue,
                    ">&2" if fd == 1 => Redirect::OutToErr,
                    ">&2" => continue,
                    _ => {
                        let Some(Tok::Word(target)) = toks.next() else {
                            return Err(SyntaxError::Redirection);
                        };
                        match op {
                            "<" => Redirect::From(target),
                            _ => Redirect::To {
                                fd,
                                append: op == ">>",
                                target,
                            },
                        }
                    }
                };
                cmd.redirects.push(r);
            }
            Tok::Pipe => {
                if cmd.words.is_empty() {
                    return Err(SyntaxError::Unexpected("|"));
                }
                pipeline.push(std::mem::take(&mut cmd));
            }
            Tok::Semi | Tok::And | Tok::Or => {
                let op = match t {
                    Tok::And => "&&",
                    Tok::Or => "||",
                    _ => ";",
                };
                if cmd.words.is_empty() && cmd.redirects.is_empty() {
                    if !pipeline.is_empty() || op != ";" {
                        return Err(SyntaxError::Unexpected(op));
                    }
                } else {
                    pipeline.push(std::mem::take(&mut cmd));
                }
                if !pipeline.is_empty() {
                    script.push((when, std::mem::take(&mut pipeline)));
                }
                when = match t {
                    Tok::And => When::IfOk,
                    Tok::Or => When::IfFailed,
                    _ => When::Always,
                };
            }
        }
    }
    if !cmd.words.is_empty() || !cmd.redirects.is_empty() {
        pipeline.push(cmd);
    }
    if !pipeline.is_empty() {
        script.push((when, pipeline));
    } else if when != When::Always {
        return Err(SyntaxError::EndOfFile);
    }
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Word {
        Word {
            parts: vec![Part::Lit(s.into())],
            quoted: false,
        }
    }

    #[test]
    fn lists_and_quotes() {
        let s = parse("echo 'a b' \"$HOME x\" && false || exit 3; ls").unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].0, When::Always);
        assert_eq!(s[1].0, When::IfOk);
        assert_eq!(s[2].0, When::IfFailed);
        let words = &s[0].1[0].words;
        assert_eq!(words[1].parts, [Part::Lit("a b".into())]);
        assert_eq!(
            words[2].parts,
            [Part::Var("HOME".into()), Part::Lit(" x".into())]
        );
    }

    #[test]
    fn pipes_and_redirects() {
        let s = parse("tar cf - /x | tail -c+1 > /tmp/o 2>&1").unwrap();
        assert_eq!(s[0].1.len(), 2);
        assert_eq!(
            s[0].1[1].redirects,
            [
                Redirect::To {
                    fd: 1,
                    append: false,
                    target: lit("/tmp/o")
                },
                Redirect::ErrToOut
            ]
        );
        let error = |src: &str| parse(src).err().map(|e| e.to_string());
        assert_eq!(
            error("echo 'x").as_deref(),
            Some("syntax error: unterminated quoted string")
        );
        assert_eq!(
            error("&& x").as_deref(),
            Some("syntax error: unexpected \"&&\"")
        );
        assert_eq!(
            error("a | | b").as_deref(),
            Some("syntax error: unexpected \"|\"")
        );
        assert_eq!(
            error("a &").as_deref(),
            Some("syntax error: background jobs (&) are not supported")
        );
    }
}
