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

/// The state of [`tokenize`]: the input, where it is read, the tokens so far
/// and the word being read.
struct Lexer {
    chars: Vec<char>,
    i: usize,
    toks: Vec<Tok>,
    word: Word,
    in_word: bool,
}

impl Lexer {
    /// Ends the word being read, if any.
    fn flush(&mut self) {
        if self.in_word {
            self.toks.push(Tok::Word(std::mem::take(&mut self.word)));
            self.in_word = false;
        }
    }

    /// An operator of `len` characters: ends the word, then pushes `tok`.
    fn op(&mut self, tok: Tok, len: usize) {
        self.flush();
        self.toks.push(tok);
        self.i += len;
    }

    /// Appends a `$` expansion read just after `chars[dollar_at]` (a
    /// literal `$` if none follows).
    fn expansion(&mut self, dollar_at: usize) {
        let (part, next) = dollar(&self.chars, dollar_at + 1);
        match part {
            Some(p) => self.word.parts.push(p),
            None => push_lit(&mut self.word.parts, '$'),
        }
        self.i = next;
    }

    /// A redirection operator at `i`; a lone unquoted `1` or `2` word just
    /// before it is its file descriptor.
    fn redirection(&mut self, c: char) {
        let mut fd = if c == '>' { 1 } else { 0 };
        let lone = |w: &Word, d: &str| w.parts == [Part::Lit(d.into())] && !w.quoted;
        if self.in_word && lone(&self.word, "2") {
            fd = 2;
            self.word = Word::default();
            self.in_word = false;
        } else if self.in_word && lone(&self.word, "1") {
            self.word = Word::default();
            self.in_word = false;
        }
        self.flush();
        let i = self.i;
        let rest: String = self.chars[i..self.chars.len().min(i + 3)].iter().collect();
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
        self.toks.push(Tok::Redir(fd, op));
        self.i += len;
    }

    /// A single-quoted string at `i`: all literal up to the closing quote.
    fn single_quoted(&mut self) -> Result<(), SyntaxError> {
        self.in_word = true;
        self.word.quoted = true;
        let start = self.i + 1;
        let mut j = start;
        while j < self.chars.len() && self.chars[j] != '\'' {
            j += 1;
        }
        if j >= self.chars.len() {
            return Err(SyntaxError::Unterminated);
        }
        for ch in &self.chars[start..j] {
            push_lit(&mut self.word.parts, *ch);
        }
        if start == j {
            self.word.parts.push(Part::Lit(String::new()));
        }
        self.i = j + 1;
        Ok(())
    }

    /// A double-quoted string at `i`: backslash escapes of `"`, `\`, `$`
    /// and `` ` ``, and `$` expansions, up to the closing quote.
    fn double_quoted(&mut self) -> Result<(), SyntaxError> {
        self.in_word = true;
        self.word.quoted = true;
        self.i += 1;
        while self.i < self.chars.len() {
            let i = self.i;
            match self.chars[i] {
                '"' => {
                    self.i += 1;
                    return Ok(());
                }
                '\\' if matches!(self.chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                    push_lit(&mut self.word.parts, self.chars[i + 1]);
                    self.i += 2;
                }
                '$' => self.expansion(i),
                ch => {
                    push_lit(&mut self.word.parts, ch);
                    self.i += 1;
                }
            }
        }
        Err(SyntaxError::Unterminated)
    }

    /// A backslash outside quotes: the next character is literal (a
    /// backslash-newline is removed).
    fn escaped(&mut self) {
        self.in_word = true;
        match self.chars.get(self.i + 1) {
            Some('\n') => {}
            Some(ch) => push_lit(&mut self.word.parts, *ch),
            None => {}
        }
        self.i += 2;
    }
}

/// Splits a script into words and operator tokens.
fn tokenize(src: &str) -> Result<Vec<Tok>, SyntaxError> {
    let mut lx = Lexer {
        chars: src.chars().collect(),
        i: 0,
        toks: Vec::new(),
        word: Word::default(),
        in_word: false,
    };
    while lx.i < lx.chars.len() {
        let i = lx.i;
        let c = lx.chars[i];
        let next = lx.chars.get(i + 1).copied();
        match c {
            ' ' | '\t' => {
                lx.flush();
                lx.i += 1;
            }
            '\n' | ';' => lx.op(Tok::Semi, 1),
            '#' if !lx.in_word => {
                while lx.i < lx.chars.len() && lx.chars[lx.i] != '\n' {
                    lx.i += 1;
                }
            }
            '&' if next == Some('&') => lx.op(Tok::And, 2),
            '|' if next == Some('|') => lx.op(Tok::Or, 2),
            '|' => lx.op(Tok::Pipe, 1),
            '&' => return Err(SyntaxError::Background),
            '>' | '<' => lx.redirection(c),
            '\'' => lx.single_quoted()?,
            '"' => lx.double_quoted()?,
            '\\' => lx.escaped(),
            '$' => {
                lx.in_word = true;
                lx.expansion(i);
            }
            ch => {
                lx.in_word = true;
                push_lit(&mut lx.word.parts, ch);
                lx.i += 1;
            }
        }
    }
    lx.flush();
    Ok(lx.toks)
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
