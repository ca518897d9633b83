//! The author's surface: what handlers are registered on ([`resource`],
//! [`handlers`], [`filters`]), what they see ([`context`], [`diff`]), what
//! they return ([`errors`]) and how they change their object ([`patch`]); [`index`]es of
//! watched objects they read;
//! the [`reconcile`] model and the [`children`] it owns and applies;
//! [`admission`] handlers check or change objects before they are stored;
//! [`conversion`] serves a custom resource at several versions; [`selection`] narrows what a
//! resource's watch sees and how many of its objects run at once.

pub mod admission;
pub mod children;
pub mod context;
pub mod conversion;
pub mod diff;
pub mod errors;
pub mod filters;
pub mod handlers;
pub mod index;
pub mod patch;
pub mod reconcile;
pub mod resource;
pub mod selection;
