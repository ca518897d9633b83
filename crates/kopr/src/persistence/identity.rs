//! The operator's identity: its name, and the names derived from it that it leaves on
//! objects and in the cluster (its finalizer, the domain of its bookkeeping annotations, its
//! field manager, the component its Events name), so that two operators on one kind never
//! collide. Objects written under kopr's earlier fixed names (`kopr.dev/...`) are read and
//! moved to the operator's names as they are next written.

/// The domain of kopr's fixed names before operators had identities, and of an operator named
/// `kopr` (the default).
pub const LEGACY_DOMAIN: &str = "kopr.dev";

/// Who the operator is, and the names it uses on objects
/// ([`Operator::name`](crate::Operator::name), [`Operator::identity`](crate::Operator::identity)).
///
/// An operator named `greeting` uses:
/// - the finalizer `greeting.kopr.dev/finalizer`;
/// - annotations under `greeting.kopr.dev/` (progress records, the diff base);
/// - the field manager `greeting` for its patches and applied children;
/// - `greeting` as its Events' `reportingController` and `source.component`.
///
/// The operator named `kopr` (the default) keeps kopr's historical names
/// (`kopr.dev/finalizer`, `kopr.dev/...`).
///
/// ```
/// use kopr::Identity;
/// let greeting = Identity::new("greeting");
/// assert_eq!(greeting.finalizer(), "greeting.kopr.dev/finalizer");
/// assert_eq!(greeting.annotation("last-handled-configuration"),
///            "greeting.kopr.dev/last-handled-configuration");
/// assert_eq!(greeting.field_manager(), "greeting");
///
/// let custom = Identity::new("greeting").domain("greeting.example.com").finalizer_name("example.com/cleanup");
/// assert_eq!(custom.finalizer(), "example.com/cleanup");
/// assert_eq!(custom.annotation("create"), "greeting.example.com/create");
/// ```
///
/// # Guarantees
/// An object that still carries the legacy `kopr.dev/finalizer` or `kopr.dev/<handler>`
/// records is handled as if it carried the operator's own: the finalizer is released (or
/// replaced by the operator's) and records are rewritten under the operator's domain as the
/// object is next written, so nothing is orphaned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    name: String,
    domain: String,
    finalizer: String,
    field_manager: String,
    component: String,
    /// Derived once, as every cycle reads them: the annotation prefixes records are found
    /// under (the operator's `<domain>/`, then kopr's historical one when it differs) and the
    /// status paths (see [`Identity::status_paths`]).
    prefixes: Vec<String>,
    status_paths: Vec<Vec<String>>,
}

/// The annotation prefixes of `domain`: its own, then kopr's historical one when it differs.
fn prefixes_of(domain: &str) -> Vec<String> {
    let mut list = vec![format!("{domain}/")];
    if domain != LEGACY_DOMAIN {
        list.push(format!("{LEGACY_DOMAIN}/"));
    }
    list
}

/// The status paths of the operator `name`: `status.kopr` for `kopr`, else
/// `status.kopr.<name>` and then the historical `status.kopr`.
fn status_paths_of(name: &str) -> Vec<Vec<String>> {
    let legacy = vec!["status".to_owned(), "kopr".to_owned()];
    if name == "kopr" {
        return vec![legacy];
    }
    let mut own = legacy.clone();
    own.push(name.to_owned());
    vec![own, legacy]
}

impl Default for Identity {
    fn default() -> Self {
        Identity::new("kopr")
    }
}

/// Why an [`Identity`] cannot be used: Kubernetes would refuse its names.
///
/// ```
/// use kopr::identity::IdentityError;
/// let error = kopr::Identity::new("My Operator").check().unwrap_err();
/// assert!(matches!(error, IdentityError::Name(ref name) if name == "My Operator"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The name is not a DNS-1123 label, or is one of kopr's record names.
    #[error(
        "operator name {0:?}: must be a lowercase RFC 1123 label (at most 63 characters of a-z, 0-9 and '-', starting and ending with an alphanumeric character), other than progress and message"
    )]
    Name(String),
    /// The annotation domain is not a DNS-1123 subdomain.
    #[error("annotation domain {0:?}: must be a lowercase RFC 1123 subdomain")]
    Domain(String),
    /// The finalizer is not a qualified name with a domain prefix.
    #[error("finalizer {0:?}: must be a domain-qualified name such as example.com/cleanup")]
    Finalizer(String),
}

impl Identity {
    /// The identity of the operator called `name`, with every name derived from it.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::new("books").component(), "books");
    /// ```
    pub fn new(name: impl Into<String>) -> Identity {
        let name = name.into();
        let domain = if name == "kopr" {
            LEGACY_DOMAIN.to_owned()
        } else {
            format!("{name}.{LEGACY_DOMAIN}")
        };
        Identity {
            finalizer: format!("{domain}/finalizer"),
            field_manager: name.clone(),
            component: name.clone(),
            prefixes: prefixes_of(&domain),
            status_paths: status_paths_of(&name),
            domain,
            name,
        }
    }

    /// Overrides the domain of the bookkeeping annotations (`<domain>/<key>`); the finalizer
    /// follows it unless set with [`finalizer_name`](Self::finalizer_name) after.
    ///
    /// ```
    /// let id = kopr::Identity::new("books").domain("books.example.com");
    /// assert_eq!(id.finalizer(), "books.example.com/finalizer");
    /// ```
    pub fn domain(mut self, domain: impl Into<String>) -> Identity {
        self.domain = domain.into();
        self.finalizer = format!("{}/finalizer", self.domain);
        self.prefixes = prefixes_of(&self.domain);
        self
    }

    /// Overrides the finalizer.
    ///
    /// ```
    /// let id = kopr::Identity::new("books").finalizer_name("example.com/books");
    /// assert_eq!(id.finalizer(), "example.com/books");
    /// ```
    pub fn finalizer_name(mut self, finalizer: impl Into<String>) -> Identity {
        self.finalizer = finalizer.into();
        self
    }

    /// Overrides the field manager of the operator's patches and applied children.
    ///
    /// ```
    /// let id = kopr::Identity::new("books").field_manager_name("books-controller");
    /// assert_eq!(id.field_manager(), "books-controller");
    /// ```
    pub fn field_manager_name(mut self, manager: impl Into<String>) -> Identity {
        self.field_manager = manager.into();
        self
    }

    /// Overrides the component named by the operator's Events.
    ///
    /// ```
    /// let id = kopr::Identity::new("books").component_name("books-operator");
    /// assert_eq!(id.component(), "books-operator");
    /// ```
    pub fn component_name(mut self, component: impl Into<String>) -> Identity {
        self.component = component.into();
        self
    }

    /// The operator's name.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::default().name(), "kopr");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The finalizer the operator adds.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::default().finalizer(), "kopr.dev/finalizer");
    /// ```
    pub fn finalizer(&self) -> &str {
        &self.finalizer
    }

    /// The field manager of the operator's writes.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::new("books").field_manager(), "books");
    /// ```
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    /// The component the operator's Events name.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::new("books").component(), "books");
    /// ```
    pub fn component(&self) -> &str {
        &self.component
    }

    /// The annotation key `<domain>/<name>`.
    ///
    /// ```
    /// assert_eq!(kopr::Identity::new("books").annotation("x"), "books.kopr.dev/x");
    /// ```
    pub fn annotation(&self, name: &str) -> String {
        format!("{}/{name}", self.domain)
    }

    /// What the operator's annotation keys start with (`<domain>/`).
    pub(crate) fn prefix(&self) -> &str {
        &self.prefixes[0]
    }

    /// The prefixes annotation records are found under: the operator's, then kopr's historical
    /// one when it is not the operator's.
    pub(crate) fn prefixes(&self) -> &[String] {
        &self.prefixes
    }

    /// The legacy annotation key `kopr.dev/<name>` this operator reads and moves from, unless it
    /// is its own.
    pub(crate) fn legacy_annotation(&self, name: &str) -> Option<String> {
        (self.domain != LEGACY_DOMAIN).then(|| format!("{LEGACY_DOMAIN}/{name}"))
    }

    /// The legacy finalizer this operator releases, unless it is its own.
    pub(crate) fn legacy_finalizer(&self) -> Option<String> {
        (self.finalizer != legacy_finalizer()).then(legacy_finalizer)
    }

    /// Where the operator keeps its records under the status with
    /// [`Storage::Status`](crate::Storage::Status), as path segments: `status.kopr` for the
    /// operator named `kopr`, `status.kopr.<name>` for any other; then, for another, kopr's
    /// historical `status.kopr`, read and moved from.
    pub(crate) fn status_paths(&self) -> &[Vec<String>] {
        &self.status_paths
    }

    /// Whether an annotation is bookkeeping rather than something a user changes: any kopr
    /// operator's (`kopr.dev/…`, `<name>.kopr.dev/…`) or this operator's.
    pub(crate) fn is_bookkeeping(&self, key: &str) -> bool {
        let Some((domain, _)) = key.split_once('/') else {
            return false;
        };
        domain == self.domain
            || domain == LEGACY_DOMAIN
            || domain
                .strip_suffix(LEGACY_DOMAIN)
                .is_some_and(|d| d.ends_with('.'))
    }

    /// Checks that Kubernetes accepts the identity's names.
    ///
    /// ```
    /// assert!(kopr::Identity::new("greeting").check().is_ok());
    /// assert!(kopr::Identity::new("Greeting Operator").check().is_err());
    /// ```
    ///
    /// # Errors
    /// [`IdentityError`] naming the first name Kubernetes would refuse.
    pub fn check(&self) -> Result<(), IdentityError> {
        // Names of kopr's own records under `status.kopr`, which a named operator nests under.
        if !is_label(&self.name) || matches!(self.name.as_str(), "progress" | "message") {
            return Err(IdentityError::Name(self.name.clone()));
        }
        if !is_subdomain(&self.domain) {
            return Err(IdentityError::Domain(self.domain.clone()));
        }
        let qualified = self
            .finalizer
            .split_once('/')
            .is_some_and(|(prefix, name)| {
                is_subdomain(prefix)
                    && !name.is_empty()
                    && name.len() <= 63
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            });
        if !qualified {
            return Err(IdentityError::Finalizer(self.finalizer.clone()));
        }
        Ok(())
    }
}

fn legacy_finalizer() -> String {
    format!("{LEGACY_DOMAIN}/finalizer")
}

fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

fn is_subdomain(text: &str) -> bool {
    text.len() <= 253 && text.split('.').all(is_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_keeps_the_historical_names() {
        let kopr = Identity::default();
        assert_eq!(kopr.legacy_finalizer(), None);
        assert_eq!(kopr.legacy_annotation("create"), None);
        assert_eq!(kopr.annotation("create"), "kopr.dev/create");
    }

    #[test]
    fn a_named_operator_reads_the_historical_names() {
        let greeting = Identity::new("greeting");
        assert_eq!(
            greeting.legacy_finalizer().as_deref(),
            Some("kopr.dev/finalizer")
        );
        assert_eq!(
            greeting.legacy_annotation("create").as_deref(),
            Some("kopr.dev/create")
        );
    }

    #[test]
    fn bookkeeping_is_any_kopr_operators() {
        let greeting = Identity::new("greeting").domain("greeting.example.com");
        for key in [
            "kopr.dev/create",
            "books.kopr.dev/create",
            "greeting.example.com/x",
        ] {
            assert!(greeting.is_bookkeeping(key), "{key}");
        }
        for key in ["notkopr.dev/x", "example.com/x", "plain"] {
            assert!(!greeting.is_bookkeeping(key), "{key}");
        }
    }

    #[test]
    fn names_kubernetes_refuses_are_errors() {
        assert!(matches!(
            Identity::new("-x").check(),
            Err(IdentityError::Name(_))
        ));
        assert!(matches!(
            Identity::new("x").domain("Bad_Domain").check(),
            Err(IdentityError::Domain(_))
        ));
        assert!(matches!(
            Identity::new("x")
                .finalizer_name("nofinalizerprefix")
                .check(),
            Err(IdentityError::Finalizer(_))
        ));
    }

    #[test]
    fn status_records_nest_under_the_name() {
        assert_eq!(Identity::default().status_paths(), [["status", "kopr"]]);
        assert_eq!(
            Identity::new("greeting").status_paths(),
            [vec!["status", "kopr", "greeting"], vec!["status", "kopr"]]
        );
        assert!(Identity::new("progress").check().is_err());
    }
}
