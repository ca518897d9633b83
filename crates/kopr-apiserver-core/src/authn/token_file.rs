//! Static users from a token file (`--token-auth-file`), in kube's CSV
//! format: `token,user,uid[,"group1,group2"]`, one user a line.

use std::collections::HashMap;
use std::path::Path;

use super::{AUTHENTICATED_GROUP, UserInfo};

/// Errors reading a token file.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("token file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("token file {path}, line {line}: {why}")]
    Malformed {
        /// The file.
        path: String,
        /// The line number (from 1).
        line: usize,
        /// What is wrong.
        why: String,
    },
}

/// The users of a token file, by token.
#[derive(Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenFile({} users)", self.users.len())
    }
}

/// The fields of one CSV line (double quotes group commas; `""` is a quote).
fn fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    out.push(field);
    Ok(out)
}

impl TokenFile {
    /// Reads a token file.
    ///
    /// # Errors
    /// [`TokenFileError`] when it cannot be read or a line has fewer than
    /// three fields.
    pub fn read(path: &Path) -> Result<TokenFile, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        TokenFile::parse(&text).map_err(|(line, why)| TokenFileError::Malformed {
            path: path.display().to_string(),
            line,
            why,
        })
    }

    /// Parses a token file's text; on error, the line number and why.
    pub fn parse(text: &str) -> Result<TokenFile, (usize, String)> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let f = fields(line).map_err(|why| (i + 1, why))?;
            if f.len() < 3 {
                return Err((
                    i + 1,
                    format!("expected at least 3 fields, found {}", f.len()),
                ));
            }
            let mut groups: Vec<String> = f
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            groups.push(AUTHENTICATED_GROUP.to_string());
            let user = UserInfo {
                name: f[1].clone(),
                uid: f[2].clone(),
                groups,
                extra: Default::default(),
            };
            users.insert(f[0].clone(), user);
        }
        Ok(TokenFile { users })
    }

    /// The user of `token`, if it is one of the file's.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        self.users.get(token).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubes_csv_with_quoted_groups() {
        let file = TokenFile::parse(
            "# comment\nt1,jane,1001,\"dev,ops\"\nt2,bob,1002\n\nt3,\"carol \"\"c\"\"\",1003,admins\n",
        )
        .expect("parsed");
        let jane = file.authenticate("t1").expect("jane");
        assert_eq!(jane.name, "jane");
        assert_eq!(jane.uid, "1001");
        assert_eq!(jane.groups, ["dev", "ops", "system:authenticated"]);
        assert_eq!(
            file.authenticate("t2").map(|u| u.groups),
            Some(vec!["system:authenticated".to_string()])
        );
        assert_eq!(
            file.authenticate("t3").map(|u| u.name),
            Some("carol \"c\"".into())
        );
        assert!(file.authenticate("t4").is_none());
        assert_eq!(TokenFile::parse("t,u\n").err().map(|e| e.0), Some(1));
        assert!(TokenFile::parse("t,\"u,1\n").is_err());
    }
}
