//! The operator's settings, each changed by one builder method: who the operator is, what it
//! serves, how many objects it handles at once, where it keeps its state, and its timeouts and
//! backoffs.

use std::time::Duration;

use super::Operator;
use crate::persistence::identity::Identity;
use crate::persistence::storage::Storage;
use crate::runtime::namespaces::NamespacePatterns;

impl Operator {
    /// Names the operator (default `kopr`; the command line sets its program's name). Its
    /// finalizer, annotation domain, field manager and Events component derive from the name
    /// (see [`Identity`]), so two operators on one kind never collide.
    ///
    /// ```
    /// // Finalizer greeting.kopr.dev/finalizer, field manager and Events component greeting.
    /// let operator = kopr::Operator::new().name("greeting");
    /// ```
    pub fn name(self, name: impl Into<String>) -> Self {
        self.identity(Identity::new(name))
    }

    /// Sets the operator's identity, with names overridden where they must be (an existing
    /// finalizer, a field manager other tools know).
    ///
    /// ```
    /// use kopr::Identity;
    /// let operator = kopr::Operator::new()
    ///     .identity(Identity::new("books").finalizer_name("example.com/books"));
    /// ```
    ///
    /// # Errors
    /// [`run_until`](Self::run_until) fails with [`Error::Config`](crate::Error::Config) when
    /// Kubernetes would refuse one of its names ([`Identity::check`]).
    pub fn identity(mut self, identity: Identity) -> Self {
        self.settings.identity = identity;
        self
    }

    /// Serves only the namespaces matching `patterns` (default: all). The command line's
    /// `--namespace` sets it.
    ///
    /// ```
    /// use kopr::{NamespacePatterns, Operator};
    /// let patterns = NamespacePatterns::parse(["team-*", "!team-sandbox"]).unwrap();
    /// let operator = Operator::new().namespaces(patterns);
    /// ```
    pub fn namespaces(mut self, patterns: NamespacePatterns) -> Self {
        self.settings.namespaces = patterns;
        self
    }

    /// Handles at most `workers` objects at the same time (default 64). Each object in flight
    /// holds a parsed body and, with kube-rs's HTTP/1.1 client, a connection of its own: about
    /// 60 KiB in all.
    ///
    /// ```
    /// let operator = kopr::Operator::new().workers(8);
    /// ```
    pub fn workers(mut self, workers: usize) -> Self {
        self.settings.workers = workers.max(1);
        self
    }

    /// Chooses where progress and the diff base are stored (default: annotations).
    ///
    /// For throughput, choose [`Storage::Status`] when the resource's status keeps unknown
    /// fields: one write per handled change instead of two.
    ///
    /// ```
    /// let operator = kopr::Operator::new().storage(kopr::Storage::Status);
    /// ```
    ///
    /// # Caveats
    /// Changing the storage of a running deployment loses what the other kept: the diff base
    /// (objects are then seen as created again) and the progress of causes in flight.
    pub fn storage(mut self, storage: Storage) -> Self {
        self.settings.storage = storage;
        self
    }

    /// The server-side timeout of each watch request (default 60 s); the watch is renewed
    /// after it.
    ///
    /// ```
    /// let operator = kopr::Operator::new().watch_timeout(std::time::Duration::from_secs(300));
    /// ```
    pub fn watch_timeout(mut self, timeout: Duration) -> Self {
        self.settings.watch_timeout = timeout;
        self
    }

    /// How long running handlers may take to finish when the operator stops (default 30 s).
    ///
    /// ```
    /// let operator = kopr::Operator::new().shutdown_timeout(std::time::Duration::from_secs(120));
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.settings.shutdown_timeout = timeout;
        self
    }

    /// The longest per-object backoff after API errors that are not transient (403, 422, …):
    /// 0.5 s doubling up to this (default 60 s).
    ///
    /// ```
    /// let operator = kopr::Operator::new().max_error_backoff(std::time::Duration::from_secs(300));
    /// ```
    pub fn max_error_backoff(mut self, backoff: Duration) -> Self {
        self.settings.max_error_backoff = backoff;
        self
    }

    /// The longest per-object backoff after transient API errors (connection failures, 409,
    /// 429, 5xx): 0.1 s doubling up to this (default 5 s), or the server's `Retry-After` when
    /// longer.
    ///
    /// ```
    /// let operator = kopr::Operator::new().max_transient_backoff(std::time::Duration::from_secs(10));
    /// ```
    pub fn max_transient_backoff(mut self, backoff: Duration) -> Self {
        self.settings.max_transient_backoff = backoff;
        self
    }

    /// Posts a Normal Event when a handler succeeds (off by default: one more request per
    /// handled object; failures are always posted as Warning Events).
    ///
    /// ```
    /// let operator = kopr::Operator::new().success_events(true);
    /// ```
    pub fn success_events(mut self, on: bool) -> Self {
        self.settings.success_events = on;
        self
    }

    /// Stores each handler's `Ok` value under `status.<handler-id>`, as Kopf does (on by
    /// default).
    ///
    /// ```
    /// let operator = kopr::Operator::new().store_results(false);
    /// ```
    pub fn store_results(mut self, on: bool) -> Self {
        self.settings.store_results = on;
        self
    }
}
