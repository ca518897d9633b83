//! Configuration compiled from stored objects (webhook configurations,
//! policies and bindings), kept until one of them changes: each request
//! compares the store's last change under the configuration's prefixes
//! with the one the compiled form was built at.

use std::sync::{Arc, Mutex};

use crate::storage::Store;

/// A compiled configuration of type `T`, rebuilt on change.
pub(crate) struct Compiled<T> {
    store: Store,
    prefixes: &'static [&'static str],
    build: fn(&Store) -> T,
    current: Mutex<Option<(i64, Arc<T>)>>,
}

impl<T> Compiled<T> {
    /// Compiles with `build` the objects stored under `prefixes`.
    pub fn new(store: Store, prefixes: &'static [&'static str], build: fn(&Store) -> T) -> Self {
        Compiled {
            store,
            prefixes,
            build,
            current: Mutex::new(None),
        }
    }

    /// The configuration as of the store's latest change.
    pub fn get(&self) -> Arc<T> {
        let stamp = self.store.last_change_of(self.prefixes);
        let Ok(mut current) = self.current.lock() else {
            return Arc::new((self.build)(&self.store));
        };
        match current.as_ref() {
            Some((at, compiled)) if *at == stamp => compiled.clone(),
            _ => {
                let compiled = Arc::new((self.build)(&self.store));
                *current = Some((stamp, compiled.clone()));
                compiled
            }
        }
    }
}
