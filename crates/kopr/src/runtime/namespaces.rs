//! Which namespaces an operator serves.
//!
//! This module owns [`NamespacePatterns`]: an ordered list of glob patterns
//! (optionally negated with a leading `!`) parsed from configuration, the
//! decision whether a given namespace is served, and the check whether the
//! list is a plain set of names that can be watched one by one. The glob
//! matcher is self-contained (no regular expressions).

use std::fmt;

/// An ordered set of namespace patterns.
///
/// Each pattern is a glob: `*` matches any run of characters, `?` one
/// character, `[abc]` / `[a-z]` one character from a class and `[!abc]` one
/// character outside it. A leading `!` negates the whole pattern.
///
/// The first pattern whose glob matches a namespace decides: a positive
/// pattern serves it, a negated one excludes it. When no pattern matches,
/// the namespace is served only if every pattern is a negation (so
/// `!kube-*` alone means "everything except `kube-*`"). An empty set serves
/// every namespace; that is also the [`Default`].
///
/// ```
/// use kopr::NamespacePatterns;
///
/// let patterns = NamespacePatterns::parse(["!team-sandbox", "team-*"])?;
/// assert!(patterns.matches("team-a"));
/// assert!(!patterns.matches("team-sandbox"));
/// assert!(!patterns.matches("kube-system"));
///
/// let all_but_system = NamespacePatterns::parse(["!kube-*"])?;
/// assert!(all_but_system.matches("default") && !all_but_system.matches("kube-public"));
///
/// let plain = NamespacePatterns::parse(["a,b"])?;
/// assert_eq!(plain.exact_names(), Some(vec!["a".to_owned(), "b".to_owned()]));
/// # Ok::<(), kopr::namespaces::PatternError>(())
/// ```
///
/// # Caveats
/// Order matters: the first matching pattern decides, so `["team-*", "!team-sandbox"]`
/// serves `team-sandbox` (the first pattern matches it). Put exclusions first. Patterns
/// apply to namespaced resources only; cluster-scoped ones are always served.
#[derive(Debug, Clone, Default)]
pub struct NamespacePatterns {
    patterns: Vec<Pattern>,
}

/// One parsed pattern.
#[derive(Debug, Clone)]
struct Pattern {
    /// The glob text, without the negation mark.
    glob: String,
    negated: bool,
    tokens: Vec<Token>,
}

/// One element of a compiled glob.
#[derive(Debug, Clone)]
enum Token {
    /// Exactly this character.
    Literal(char),
    /// `?`: any single character.
    AnyOne,
    /// `*`: any run of characters, including none.
    AnyRun,
    /// `[...]`: one character in (or, when negated, outside) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    fn matches_char(&self, c: char) -> bool {
        match self {
            Token::Literal(l) => *l == c,
            Token::AnyOne => true,
            Token::AnyRun => false,
            Token::Class { negated, ranges } => {
                let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                inside != *negated
            }
        }
    }
}

/// A pattern that could not be parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternError {
    /// The offending pattern as written (after comma splitting and trimming).
    pub pattern: String,
    /// Why it was rejected.
    pub reason: String,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid namespace pattern {:?}: {}",
            self.pattern, self.reason
        )
    }
}

impl std::error::Error for PatternError {}

impl NamespacePatterns {
    /// A set that serves every namespace.
    pub fn all() -> Self {
        Self::default()
    }

    /// Parses patterns in order.
    ///
    /// Each item may hold several comma-separated patterns (`"a*,!ab*"`);
    /// they are split and trimmed. No patterns at all means every namespace.
    ///
    /// # Errors
    ///
    /// Returns a [`PatternError`] for an empty pattern (including an empty
    /// item, a stray comma or a lone `!`), an unclosed `[` class, an empty
    /// class, or a class range whose ends are reversed (`[z-a]`).
    pub fn parse<I, S>(patterns: I) -> Result<Self, PatternError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut parsed = Vec::new();
        for item in patterns {
            for piece in item.as_ref().split(',') {
                parsed.push(Pattern::parse(piece.trim())?);
            }
        }
        Ok(Self { patterns: parsed })
    }

    /// Whether `namespace` is served.
    pub fn matches(&self, namespace: &str) -> bool {
        if self.patterns.is_empty() {
            return true;
        }
        for pattern in &self.patterns {
            if glob_match(&pattern.tokens, namespace) {
                return !pattern.negated;
            }
        }
        self.patterns.iter().all(|p| p.negated)
    }

    /// Whether every namespace is served for certain.
    ///
    /// True for an empty set, and when the first pattern is a positive
    /// pattern made only of `*` (it matches everything, so it always decides).
    pub fn is_all(&self) -> bool {
        match self.patterns.first() {
            None => true,
            Some(first) => {
                !first.negated && first.tokens.iter().all(|t| matches!(t, Token::AnyRun))
            }
        }
    }

    /// The namespaces to watch one by one, when that is possible.
    ///
    /// Returns `Some` with the names (in order, without duplicates) when
    /// there is at least one pattern and every pattern is a plain positive
    /// name with no glob characters. Returns `None` otherwise, in which case
    /// the caller has to watch cluster-wide and filter with
    /// [`matches`](Self::matches).
    pub fn exact_names(&self) -> Option<Vec<String>> {
        if self.patterns.is_empty() {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        for pattern in &self.patterns {
            let plain = !pattern.negated
                && pattern
                    .tokens
                    .iter()
                    .all(|t| matches!(t, Token::Literal(_)));
            if !plain {
                return None;
            }
            if !names.contains(&pattern.glob) {
                names.push(pattern.glob.clone());
            }
        }
        Some(names)
    }
}

impl Pattern {
    fn parse(text: &str) -> Result<Pattern, PatternError> {
        let error = |reason: &str| PatternError {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        let (negated, glob) = match text.strip_prefix('!') {
            Some(rest) => (true, rest.trim()),
            None => (false, text),
        };
        if glob.is_empty() {
            return Err(error("empty pattern"));
        }
        let tokens = compile(glob).map_err(error)?;
        Ok(Pattern {
            glob: glob.to_owned(),
            negated,
            tokens,
        })
    }
}

/// Compiles glob text into tokens, or explains why it is malformed.
fn compile(glob: &str) -> Result<Vec<Token>, &'static str> {
    let chars: Vec<char> = glob.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => {
                // Consecutive stars mean the same as one.
                if !matches!(tokens.last(), Some(Token::AnyRun)) {
                    tokens.push(Token::AnyRun);
                }
                i += 1;
            }
            '?' => {
                tokens.push(Token::AnyOne);
                i += 1;
            }
            '[' => {
                let (token, next) = compile_class(&chars, i + 1)?;
                tokens.push(token);
                i = next;
            }
            c => {
                tokens.push(Token::Literal(c));
                i += 1;
            }
        }
    }
    Ok(tokens)
}

/// Compiles a character class whose body starts at `start` (just after the
/// `[`). Returns the token and the index just past the closing `]`.
///
/// A `]` right after `[` or `[!` is taken literally, as is a `-` at either
/// end of the class.
fn compile_class(chars: &[char], start: usize) -> Result<(Token, usize), &'static str> {
    let mut i = start;
    let negated = chars.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    let body_start = i;
    let mut ranges = Vec::new();
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("unclosed '['");
        };
        if c == ']' && i > body_start {
            break;
        }
        let is_range =
            chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&hi| hi != ']');
        if is_range {
            let hi = chars[i + 2];
            if hi < c {
                return Err("reversed range in character class");
            }
            ranges.push((c, hi));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    if ranges.is_empty() {
        return Err("empty character class");
    }
    Ok((Token::Class { negated, ranges }, i + 1))
}

/// Matches `text` against compiled glob tokens.
///
/// Iterative: on a mismatch it backtracks to the most recent `*` and lets it
/// swallow one more character. Only the latest `*` needs remembering, which
/// keeps the worst case at O(tokens × characters).
fn glob_match(tokens: &[Token], text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let mut t = 0; // index into tokens
    let mut c = 0; // index into chars
    // Token index just after the latest `*`, and the text index it resumes at.
    let mut star: Option<(usize, usize)> = None;

    while c < chars.len() {
        match tokens.get(t) {
            Some(Token::AnyRun) => {
                star = Some((t + 1, c));
                t += 1;
            }
            Some(token) if token.matches_char(chars[c]) => {
                t += 1;
                c += 1;
            }
            _ => match star {
                Some((after_star, resume)) => {
                    t = after_star;
                    c = resume + 1;
                    star = Some((after_star, resume + 1));
                }
                None => return false,
            },
        }
    }
    tokens[t..]
        .iter()
        .all(|token| matches!(token, Token::AnyRun))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(list: &[&str]) -> NamespacePatterns {
        match NamespacePatterns::parse(list) {
            Ok(p) => p,
            Err(e) => panic!("parse {list:?}: {e}"),
        }
    }

    fn glob(pattern: &str, text: &str) -> bool {
        pats(&[pattern]).matches(text)
    }

    #[test]
    fn exact_name() {
        assert!(glob("default", "default"));
        assert!(!glob("default", "defaults"));
        assert!(!glob("default", "defaul"));
        assert!(!glob("default", ""));
    }

    #[test]
    fn star() {
        assert!(glob("*", "anything"));
        assert!(glob("*", ""));
        assert!(glob("kube-*", "kube-system"));
        assert!(glob("kube-*", "kube-"));
        assert!(!glob("kube-*", "kube"));
        assert!(glob("*-prod", "shop-prod"));
        assert!(!glob("*-prod", "shop-production"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(glob("a*b*c", "abbbc"));
        assert!(!glob("a*b*c", "acb"));
        assert!(glob("**x", "yyx"));
        assert!(glob("*a*", "banana"));
        assert!(!glob("*aaa*b", "aaaaaaaaaaaaaaaaaaaaaa"));
    }

    #[test]
    fn question_mark() {
        assert!(glob("team-?", "team-a"));
        assert!(!glob("team-?", "team-"));
        assert!(!glob("team-?", "team-ab"));
        assert!(glob("?*", "x"));
        assert!(!glob("?*", ""));
    }

    #[test]
    fn classes() {
        assert!(glob("env-[abc]", "env-b"));
        assert!(!glob("env-[abc]", "env-d"));
        assert!(glob("env-[a-c]", "env-c"));
        assert!(!glob("env-[a-c]", "env-d"));
        assert!(glob("env-[0-9a-f]x", "env-ex"));
        assert!(glob("env-[!abc]", "env-d"));
        assert!(!glob("env-[!abc]", "env-a"));
        assert!(glob("[-a]", "-"));
        assert!(glob("[a-]", "-"));
        assert!(glob("[]a]", "]"));
        assert!(glob("[!]]", "x"));
        assert!(!glob("[!]]", "]"));
        assert!(glob("*[0-9]", "node-7"));
        assert!(!glob("*[0-9]", "node-x"));
    }

    #[test]
    fn unicode_is_matched_per_character() {
        assert!(glob("?", "é"));
        assert!(glob("caf[é]", "café"));
    }

    #[test]
    fn negation_first_match_decides() {
        let exclude_first = pats(&["!kube-system", "kube-*"]);
        assert!(!exclude_first.matches("kube-system"));
        assert!(exclude_first.matches("kube-public"));
        assert!(!exclude_first.matches("default"));

        let include_first = pats(&["kube-*", "!kube-system"]);
        assert!(include_first.matches("kube-system"));
        assert!(include_first.matches("kube-public"));
        assert!(!include_first.matches("default"));
    }

    #[test]
    fn all_negations_default_to_served() {
        let p = pats(&["!kube-*", "!openshift-*"]);
        assert!(p.matches("default"));
        assert!(!p.matches("kube-system"));
        assert!(!p.matches("openshift-infra"));
    }

    #[test]
    fn mixed_patterns_default_to_not_served() {
        let p = pats(&["!kube-system", "team-*"]);
        assert!(!p.matches("default"));
        assert!(p.matches("team-a"));
    }

    #[test]
    fn empty_and_all() {
        let empty = pats(&[]);
        assert!(empty.is_all());
        assert!(empty.matches("anything"));
        assert!(NamespacePatterns::all().is_all());
        assert!(NamespacePatterns::all().matches("kube-system"));
        assert!(NamespacePatterns::default().is_all());
        assert!(pats(&["*"]).is_all());
        assert!(pats(&["**", "!kube-*"]).is_all());
        assert!(!pats(&["!kube-*", "*"]).is_all());
        assert!(!pats(&["default"]).is_all());
    }

    #[test]
    fn comma_splitting_and_trimming() {
        let p = pats(&["a*, !ab*", " c "]);
        // Order is a*, !ab*, c: "ab1" hits a* first.
        assert!(p.matches("ab1"));
        assert!(p.matches("a"));
        assert!(p.matches("c"));
        assert!(!p.matches("d"));

        let q = pats(&["!ab*,a*"]);
        assert!(!q.matches("ab1"));
        assert!(q.matches("a1"));

        assert!(pats(&["! kube-*"]).matches("default"));
        assert!(!pats(&["! kube-*"]).matches("kube-system"));
    }

    #[test]
    fn accepts_owned_strings() {
        let owned = vec![String::from("a"), String::from("b")];
        let p = NamespacePatterns::parse(owned);
        assert!(p.is_ok_and(|p| p.matches("b")));
    }

    #[test]
    fn errors() {
        let err = |list: &[&str]| NamespacePatterns::parse(list).err();

        let e = err(&[""]);
        assert_eq!(
            e,
            Some(PatternError {
                pattern: String::new(),
                reason: "empty pattern".into()
            })
        );
        assert!(err(&["   "]).is_some());
        assert!(err(&["a,,b"]).is_some());
        assert!(err(&["a,"]).is_some());
        assert_eq!(err(&["!"]).map(|e| e.pattern), Some("!".to_owned()));
        assert!(err(&[" ! "]).is_some());

        let e = err(&["ok", "team-[ab"]);
        assert_eq!(
            e,
            Some(PatternError {
                pattern: "team-[ab".into(),
                reason: "unclosed '['".into()
            })
        );
        assert!(err(&["["]).is_some());
        assert!(err(&["[!"]).is_some());
        assert!(err(&["[]"]).is_some());
        assert!(err(&["[z-a]"]).is_some());

        let shown = err(&["x[", "y"]).map(|e| e.to_string());
        assert_eq!(
            shown.as_deref(),
            Some("invalid namespace pattern \"x[\": unclosed '['")
        );
    }

    #[test]
    fn error_is_std_error() {
        fn takes(_: &dyn std::error::Error) {}
        let e = PatternError {
            pattern: "x".into(),
            reason: "y".into(),
        };
        takes(&e);
    }

    #[test]
    fn exact_names() {
        assert_eq!(
            pats(&["default", "team-a,team-b", "default"]).exact_names(),
            Some(vec!["default".into(), "team-a".into(), "team-b".into()])
        );
        assert_eq!(pats(&[]).exact_names(), None);
        assert_eq!(NamespacePatterns::all().exact_names(), None);
        assert_eq!(pats(&["default", "team-*"]).exact_names(), None);
        assert_eq!(pats(&["team-?"]).exact_names(), None);
        assert_eq!(pats(&["team-[ab]"]).exact_names(), None);
        assert_eq!(pats(&["default", "!kube-system"]).exact_names(), None);
    }
}
