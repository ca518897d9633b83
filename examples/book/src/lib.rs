//! The Book operator: the Book custom resource of the CRD walkthrough, with a controller.
//!
//! A `Book` (`books.christianb93.github.com/v1`) has a required `spec.author` and
//! `spec.title`. When one is created or changed, the operator logs it and reports it on the
//! status subresource: `status.observedGeneration` and a `Ready` condition, so that
//! `kubectl wait --for=condition=Ready book/NAME` works. `kubectl get books` shows the
//! Author, Title and Age columns. A mutating admission handler ([`label_author`]) labels each
//! Book with its author's slug when it is written (`author: jane-austen`), a default no schema
//! can express, so that `kubectl get books -l author=jane-austen` selects an author's books.

#![warn(missing_docs)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kopr::{Context, Denial, Handler, HandlerResult, Operator, Resource, Review};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A book in the catalogue.
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

/// The `Ready` condition for `book`: its transition time is kept while the book stays ready.
pub fn ready_condition(book: &Book) -> Condition {
    let previous = book.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == READY && c.status == "True")
    });
    let since = previous.map_or_else(
        || Time(k8s_openapi::jiff::Timestamp::now()),
        |c| c.last_transition_time.clone(),
    );
    Condition {
        type_: READY.to_owned(),
        status: "True".to_owned(),
        reason: "Catalogued".to_owned(),
        message: format!(
            "\"{}\" by {} is catalogued",
            book.spec.title, book.spec.author
        ),
        last_transition_time: since,
        observed_generation: book.metadata.generation,
    }
}

fn report_ready(ctx: &Context<Book>) {
    let book = &ctx.object;
    ctx.patch()
        .status("observedGeneration", book.metadata.generation)
        .status("conditions", [ready_condition(book)]);
}

async fn catalogued(ctx: Context<Book>) -> HandlerResult {
    tracing::info!(
        "Book: \"{}\" by {}",
        ctx.object.spec.title,
        ctx.object.spec.author
    );
    report_ready(&ctx);
    Ok(())
}

async fn changed(ctx: Context<Book>) -> HandlerResult {
    tracing::info!(
        "Update: \"{}\" by {}",
        ctx.object.spec.title,
        ctx.object.spec.author
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

/// Labels a Book with its author's slug as it is written (a mutating admission handler).
pub async fn label_author(review: Review<Book>) -> Result<(), Denial> {
    let Some(book) = &review.object else {
        return Ok(());
    };
    let wanted = slug(&book.spec.author);
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
            .on_mutate("author-label", label_author)
            .on_create(Handler::new(catalogued).id("catalogue"))
            .on_update(Handler::new(changed).id("recatalogue")),
    )
}
