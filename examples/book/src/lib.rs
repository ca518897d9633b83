//! The Book operator: the Book custom resource of the CRD walkthrough, with a controller.
//!
//! A `Book` (`books.christianb93.github.com`) is served at two versions: `v1` has a required
//! `spec.author` and `spec.title`; `v2`, the storage version, has `spec.authors` (a list) and
//! `spec.title`. The operator converts between them ([`v1::Book`] from and to [`Book`], its
//! conversion webhook): `v1`'s author is `v2`'s first, and a `v2` Book with several authors
//! keeps them all when written back through `v1`. Handlers work on `v2` whichever version a
//! client wrote. When a Book is created or changed, the operator logs it and reports it on the
//! status subresource: `status.observedGeneration` and a `Ready` condition, so that
//! `kubectl wait --for=condition=Ready book/NAME` works. `kubectl get books` shows the
//! Authors, Title and Age columns (`kubectl get books.v1.christianb93.github.com`: Author). A mutating admission handler ([`label_author`]) labels each
//! Book with its author's slug when it is written (`author: jane-austen`), a default no schema
//! can express, so that `kubectl get books -l author=jane-austen` selects an author's books.

#![warn(missing_docs)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kopr::{Context, Denial, Handler, HandlerResult, Operator, Resource, Review, conditions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The first version of the Book: one author.
pub mod v1 {
    use super::BookStatus;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A book in the catalogue, at `v1`.
    // clippy takes the repeated `type_ = ...` of the printcolumn(...) arguments for duplicated
    // attributes.
    #[allow(clippy::duplicated_attributes)]
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(
        group = "christianb93.github.com",
        version = "v1",
        kind = "Book",
        namespaced,
        doc = "A book: an author and a title, reported Ready once the operator has catalogued it",
        status = "BookStatus",
        printcolumn(name = "Author", type_ = "string", json_path = ".spec.author"),
        printcolumn(name = "Title", type_ = "string", json_path = ".spec.title"),
        printcolumn(
            name = "Age",
            type_ = "date",
            json_path = ".metadata.creationTimestamp"
        )
    )]
    pub struct BookSpec {
        /// Who wrote it.
        pub author: String,
        /// What it is called.
        pub title: String,
    }
}

/// The second version of the Book, its storage version and the one handlers receive: a
/// list of authors.
pub mod v2 {
    use super::BookStatus;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A book in the catalogue, at `v2`.
    #[allow(clippy::duplicated_attributes)]
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(
        group = "christianb93.github.com",
        version = "v2",
        kind = "Book",
        namespaced,
        doc = "A book: its authors and a title, reported Ready once the operator has catalogued it",
        status = "BookStatus",
        printcolumn(name = "Authors", type_ = "string", json_path = ".spec.authors"),
        printcolumn(name = "Title", type_ = "string", json_path = ".spec.title"),
        printcolumn(
            name = "Age",
            type_ = "date",
            json_path = ".metadata.creationTimestamp"
        )
    )]
    pub struct BookSpec {
        /// Who wrote it (a Book without authors cannot be read at `v1`).
        pub authors: Vec<String>,
        /// What it is called.
        pub title: String,
    }
}

pub use v2::{Book, BookSpec};

// ANCHOR: conversion
/// A `v1` Book's author is its `v2` authors' first.
impl From<v1::Book> for v2::Book {
    fn from(book: v1::Book) -> Self {
        v2::Book {
            metadata: book.metadata,
            spec: v2::BookSpec {
                authors: vec![book.spec.author],
                title: book.spec.title,
            },
            status: book.status,
        }
    }
}

/// A `v2` Book at `v1` shows its first author; the others are kept by the framework for
/// when the Book is written back through `v1` (see `kopr::conversion`).
impl TryFrom<v2::Book> for v1::Book {
    type Error = String;

    fn try_from(book: v2::Book) -> Result<Self, String> {
        let Some(author) = book.spec.authors.first().cloned() else {
            return Err(format!(
                "Book {:?} has no author, which v1 cannot express",
                book.metadata.name.unwrap_or_default()
            ));
        };
        Ok(v1::Book {
            metadata: book.metadata,
            spec: v1::BookSpec {
                author,
                title: book.spec.title,
            },
            status: book.status,
        })
    }
}
// ANCHOR_END: conversion

/// The authors of a Book as one line: `Ann`, `Ann and Bo`, `Ann, Bo and Cy`.
///
/// ```
/// assert_eq!(book::byline(&["Ann".into()]), "Ann");
/// assert_eq!(book::byline(&["Ann".into(), "Bo".into(), "Cy".into()]), "Ann, Bo and Cy");
/// ```
pub fn byline(authors: &[String]) -> String {
    match authors {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What the operator observed. kopr keeps its own bookkeeping beside these fields, so the
/// schema keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct BookStatus {
    /// The generation of the spec the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The `Ready` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The condition type the operator sets.
pub const READY: &str = "Ready";

/// The `Ready` condition for `book` in its status conditions, set as kube sets conditions
/// (its transition time kept while the book stays ready).
pub fn ready_conditions(book: &Book) -> Vec<Condition> {
    let mut list = book
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let ready = conditions::Update::new(READY, true)
        .reason("Catalogued")
        .message(format!(
            "\"{}\" by {} is catalogued",
            book.spec.title,
            byline(&book.spec.authors)
        ))
        .observed_generation(book.metadata.generation);
    conditions::set(&mut list, ready);
    list
}

fn report_ready(ctx: &Context<Book>) {
    let book = &ctx.object;
    ctx.patch()
        .status("observedGeneration", book.metadata.generation)
        .status("conditions", ready_conditions(book));
}

async fn catalogued(ctx: Context<Book>) -> HandlerResult {
    tracing::info!(
        "Book: \"{}\" by {}",
        ctx.object.spec.title,
        byline(&ctx.object.spec.authors)
    );
    report_ready(&ctx);
    Ok(())
}

async fn changed(ctx: Context<Book>) -> HandlerResult {
    tracing::info!(
        "Update: \"{}\" by {}",
        ctx.object.spec.title,
        byline(&ctx.object.spec.authors)
    );
    report_ready(&ctx);
    Ok(())
}

/// The label that carries the author's slug.
pub const AUTHOR_LABEL: &str = "author";

/// An author's name as a label value: lowercase letters and digits, other runs turned into
/// one `-`, at most 63 characters.
///
/// ```
/// assert_eq!(book::slug("Jane Austen"), "jane-austen");
/// assert_eq!(book::slug("  Brontë, Charlotte "), "bront-charlotte");
/// ```
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out: String = out.chars().take(63).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Labels a Book with its first author's slug as it is written (a mutating admission
/// handler; it sees `v2` Books, whichever version a client wrote).
pub async fn label_author(review: Review<Book>) -> Result<(), Denial> {
    let Some(book) = &review.object else {
        return Ok(());
    };
    let wanted = book
        .spec
        .authors
        .first()
        .map(|a| slug(a))
        .unwrap_or_default();
    let current = book
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AUTHOR_LABEL));
    if !wanted.is_empty() && current != Some(&wanted) {
        review.patch().label(AUTHOR_LABEL, Some(&wanted));
    }
    Ok(())
}

/// The Book operator.
pub fn operator() -> Operator {
    Operator::new().resource(
        Resource::<Book>::custom()
            .version::<v1::Book>()
            .on_mutate("author-label", label_author)
            .on_create(Handler::new(catalogued).id("catalogue"))
            .on_update(Handler::new(changed).id("recatalogue")),
    )
}
