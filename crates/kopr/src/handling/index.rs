//! Indices, as Kopf's `@kopf.index`: in-memory maps from keys to values, built from the objects
//! of a watched resource and readable by every handler ([`Context::index`]).
//!
//! `Resource::index(name, f)` registers one: for every object the resource's watch sees, `f`
//! maps the typed object to zero or more `(key, value)` pairs; an object's pairs replace the
//! ones it gave before, and go when it is deleted or missing from a relist. An index on a
//! resource with no handlers costs one watch and the index's values, never the objects.
//!
//! # Guarantees
//! The watch updates an index before the event reaches any handler of that resource, so a
//! handler sees every object the operator has seen up to its own object's event. Objects are
//! indexed whatever the shard (with sharding every replica indexes every object of the
//! namespaces it serves). An object that does not parse as the resource's type gives no pairs.
//!
//! [`Context::index`]: crate::Context::index
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::Pod;
//! use kopr::{Context, HandlerResult, Operator, Resource};
//!
//! async fn report(ctx: Context<Pod>) -> HandlerResult {
//!     let node = ctx.object.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
//!     let by_node = ctx.index::<String>("pods-by-node")?;
//!     tracing::info!("{} pods on {node}", by_node.get(&node).len());
//!     Ok(())
//! }
//!
//! let operator = Operator::new().resource(
//!     Resource::<Pod>::new()
//!         .index("pods-by-node", |pod: &Pod| {
//!             let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
//!             let name = pod.metadata.name.clone().unwrap_or_default();
//!             node.map(|node| (node, name)).into_iter().collect()
//!         })
//!         .on_create(report),
//! );
//! ```

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::handling::errors::LookupError;

/// One index: keys to the values objects gave for them. Handlers read it with
/// [`Context::index`](crate::Context::index).
///
/// ```no_run
/// # async fn handler(ctx: kopr::Context<k8s_openapi::api::core::v1::Node>) -> kopr::HandlerResult {
/// let pods = ctx.index::<String>("pods-by-node")?;
/// for node in pods.keys() {
///     tracing::info!("{node}: {:?}", pods.get(&node));
/// }
/// tracing::info!("{} pods indexed", pods.objects());
/// # Ok(())
/// # }
/// ```
///
/// # Caveats
/// An index is in memory only, rebuilt from the watch after each start. Handlers of other
/// resources are not held back until it is complete: one that runs early after a start may
/// see an index of a resource not fully listed yet.
pub struct Index<V> {
    name: String,
    state: RwLock<State<V>>,
}

struct State<V> {
    /// Key → object (`namespace/name`) → the values that object gave for the key.
    by_key: HashMap<String, BTreeMap<String, Vec<V>>>,
    /// Object → the keys it gave values for.
    keys_of: HashMap<String, Vec<String>>,
}

impl<V> std::fmt::Debug for Index<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Index({})", self.name)
    }
}

impl<V: Clone> Index<V> {
    fn new(name: &str) -> Index<V> {
        Index {
            name: name.to_string(),
            state: RwLock::new(State {
                by_key: HashMap::new(),
                keys_of: HashMap::new(),
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<V>> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<V>> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The index's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The values given for `key`, ordered by object (`namespace/name`), then as each object
    /// gave them.
    pub fn get(&self, key: &str) -> Vec<V> {
        self.read()
            .by_key
            .get(key)
            .map(|objects| objects.values().flatten().cloned().collect())
            .unwrap_or_default()
    }

    /// Every key with at least one value, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.read().by_key.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// How many objects gave at least one pair.
    pub fn objects(&self) -> usize {
        self.read().keys_of.len()
    }

    /// Replaces what `object` gave with `pairs`.
    fn put(&self, object: &str, pairs: Vec<(String, V)>) {
        let mut state = self.write();
        remove(&mut state, object);
        if pairs.is_empty() {
            return;
        }
        let mut keys = Vec::new();
        for (key, value) in pairs {
            let values = state
                .by_key
                .entry(key.clone())
                .or_default()
                .entry(object.to_string())
                .or_default();
            values.push(value);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        state.keys_of.insert(object.to_string(), keys);
    }

    fn forget(&self, object: &str) {
        remove(&mut self.write(), object);
    }

    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        let mut state = self.write();
        let gone: Vec<String> = state.keys_of.keys().filter(|o| !keep(o)).cloned().collect();
        for object in gone {
            remove(&mut state, &object);
        }
    }
}

fn remove<V>(state: &mut State<V>, object: &str) {
    let Some(keys) = state.keys_of.remove(object) else {
        return;
    };
    for key in keys {
        if let Some(objects) = state.by_key.get_mut(&key) {
            objects.remove(object);
            if objects.is_empty() {
                state.by_key.remove(&key);
            }
        }
    }
}

/// An index as the watch maintains it, whatever its types.
pub(crate) trait Indexer: Send + Sync {
    /// The index's name.
    fn name(&self) -> &str;
    /// Indexes `body` (a watch event's object) as `object` (`namespace/name`).
    fn apply(&self, object: &str, body: &Value);
    /// Forgets `object`.
    fn forget(&self, object: &str);
    /// Forgets every object for which `keep` is false (after a relist).
    fn retain(&self, keep: &dyn Fn(&str) -> bool);
    /// The typed [`Index`], for handlers to read.
    fn shared(&self) -> Arc<dyn Any + Send + Sync>;
    /// The name of the index's value type.
    fn value_type(&self) -> &'static str;
    /// How many objects gave at least one pair.
    fn objects(&self) -> usize;
}

/// Maps a typed object to its pairs.
type PairsFn<K, V> = Arc<dyn Fn(&K) -> Vec<(String, V)> + Send + Sync>;

/// An index over objects of type `K`.
pub(crate) struct Typed<K, V> {
    index: Arc<Index<V>>,
    pairs: PairsFn<K, V>,
}

impl<K, V> Typed<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    pub(crate) fn new(
        name: &str,
        pairs: impl Fn(&K) -> Vec<(String, V)> + Send + Sync + 'static,
    ) -> Typed<K, V> {
        Typed {
            index: Arc::new(Index::new(name)),
            pairs: Arc::new(pairs),
        }
    }
}

impl<K, V> Indexer for Typed<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.index.name()
    }

    fn apply(&self, object: &str, body: &Value) {
        let pairs = match K::deserialize(body) {
            // The author's function: a panic in it leaves the object out of the index,
            // and the resource's watch goes on.
            Ok(typed) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                (self.pairs)(&typed)
            }))
            .unwrap_or_else(|_| {
                tracing::error!(index = %self.index.name, %object, "the index function panicked; not indexed");
                Vec::new()
            }),
            Err(error) => {
                tracing::debug!(index = %self.index.name, %object, %error, "not indexed: the object does not parse");
                Vec::new()
            }
        };
        self.index.put(object, pairs);
    }

    fn forget(&self, object: &str) {
        self.index.forget(object);
    }

    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.index.retain(keep);
    }

    fn shared(&self) -> Arc<dyn Any + Send + Sync> {
        self.index.clone()
    }

    fn value_type(&self) -> &'static str {
        std::any::type_name::<V>()
    }

    fn objects(&self) -> usize {
        self.index.objects()
    }
}

/// Every index of an operator by name, as handlers reach them (kept in the operator's memo).
#[derive(Default)]
pub(crate) struct Indices {
    by_name: HashMap<String, (Arc<dyn Any + Send + Sync>, &'static str)>,
}

impl Indices {
    pub(crate) fn insert(&mut self, indexer: &dyn Indexer) {
        self.by_name.insert(
            indexer.name().to_string(),
            (indexer.shared(), indexer.value_type()),
        );
    }

    /// The index `name` with values of type `V`.
    pub(crate) fn get<V: Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<Arc<Index<V>>, LookupError> {
        let Some((index, actual)) = self.by_name.get(name) else {
            let mut known: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(LookupError::UnknownIndex {
                name: name.to_owned(),
                known: known.join(", "),
            });
        };
        index
            .clone()
            .downcast::<Index<V>>()
            .map_err(|_| LookupError::IndexType {
                name: name.to_owned(),
                actual,
                asked: std::any::type_name::<V>(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_s_pairs_replace_its_earlier_ones_and_go_with_it() {
        let typed = Typed::new("by-node", |pod: &Value| {
            let node = pod["node"].as_str().unwrap_or_default().to_string();
            vec![(node, pod["name"].as_str().unwrap_or_default().to_string())]
        });
        typed.apply("ns/a", &json!({"node": "n1", "name": "a"}));
        typed.apply("ns/b", &json!({"node": "n1", "name": "b"}));
        assert_eq!(typed.index.get("n1"), vec!["a", "b"]);
        typed.apply("ns/a", &json!({"node": "n2", "name": "a"}));
        assert_eq!(typed.index.get("n1"), vec!["b"]);
        assert_eq!(typed.index.get("n2"), vec!["a"]);
        typed.forget("ns/b");
        assert_eq!(typed.index.keys(), vec!["n2"]);
        typed.retain(&|_| false);
        assert_eq!(typed.index.objects(), 0);
        assert!(typed.index.keys().is_empty());
    }

    #[test]
    fn handlers_find_an_index_by_name_and_type() {
        let typed: Typed<Value, u32> = Typed::new("sizes", |_| vec![("k".into(), 1)]);
        let mut indices = Indices::default();
        indices.insert(&typed);
        assert!(indices.get::<u32>("sizes").is_ok());
        assert!(
            indices.get::<String>("sizes").is_err(),
            "another value type"
        );
        assert!(indices.get::<u32>("other").is_err());
    }
}
