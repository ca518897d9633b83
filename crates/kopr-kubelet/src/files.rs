//! The file tree of a simulated container, in memory: a small root
//! filesystem (`/bin`, `/etc/hostname`, `/tmp`, …), the pod's volumes at
//! their mount paths (ConfigMap, Secret, projected and downward API
//! volumes read-only, as the kubelet mounts them; `emptyDir` and the rest
//! as writable, empty directories) and a writable scratch area everywhere
//! else. Commands run with [`super::exec`] read and write it; `kubectl cp`
//! moves files in and out of it.
//!
//! Each container instance (its `containerID`) has its own tree, kept by
//! [`Containers`] until its pod is deleted; a restarted container starts
//! from a fresh tree, as a container's writable layer does.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::storage::{EventType, WatchEvent};

/// Why a file operation failed, worded as coreutils word `strerror`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsError {
    /// ENOENT
    NotFound,
    /// EISDIR
    IsDir,
    /// ENOTDIR
    NotDir,
    /// EROFS
    ReadOnly,
    /// EEXIST
    Exists,
    /// ENOTEMPTY
    NotEmpty,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FsError::NotFound => "No such file or directory",
            FsError::IsDir => "Is a directory",
            FsError::NotDir => "Not a directory",
            FsError::ReadOnly => "Read-only file system",
            FsError::Exists => "File exists",
            FsError::NotEmpty => "Directory not empty",
        })
    }
}

/// One entry of the tree.
#[derive(Debug, Clone)]
pub enum Node {
    /// A directory; `read_only` covers everything below it.
    Dir {
        /// Entries by name.
        entries: BTreeMap<String, Node>,
        /// Permission bits.
        mode: u32,
        /// A read-only mount.
        read_only: bool,
        /// Modification time (Unix seconds).
        mtime: u64,
    },
    /// A regular file.
    File {
        /// Contents.
        data: Vec<u8>,
        /// Permission bits.
        mode: u32,
        /// Modification time (Unix seconds).
        mtime: u64,
    },
}

impl Node {
    fn dir(read_only: bool) -> Node {
        Node::Dir {
            entries: BTreeMap::new(),
            mode: 0o755,
            read_only,
            mtime: now(),
        }
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        matches!(self, Node::Dir { .. })
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The components of `path`, made absolute against `cwd` and normalized
/// (`.` and `..` resolved; `..` at the root stays at the root).
pub fn components(cwd: &str, path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p.to_string()),
        }
    }
    out
}

/// An absolute path from its components.
pub fn join(comps: &[String]) -> String {
    format!("/{}", comps.join("/"))
}

/// A container's file tree.
#[derive(Debug, Clone)]
pub struct Fs {
    root: Node,
}

impl Default for Fs {
    fn default() -> Self {
        Fs::new()
    }
}

impl Fs {
    /// The base layout of every simulated image.
    pub fn new() -> Fs {
        let mut fs = Fs {
            root: Node::dir(false),
        };
        for d in [
            "bin", "dev", "etc", "home", "proc", "root", "run", "sys", "tmp", "usr", "var",
        ] {
            let _ = fs.mkdir(&[d.to_string()], true);
        }
        for d in ["/usr/bin", "/usr/local/bin", "/var/run"] {
            let _ = fs.mkdir(&components("/", d), true);
        }
        fs
    }

    /// The node at `comps`.
    pub fn get(&self, comps: &[String]) -> Result<&Node, FsError> {
        let mut node = &self.root;
        for c in comps {
            match node {
                Node::Dir { entries, .. } => node = entries.get(c).ok_or(FsError::NotFound)?,
                Node::File { .. } => return Err(FsError::NotDir),
            }
        }
        Ok(node)
    }

    /// The directory at `comps`, for a change inside it: fails when it is
    /// missing, not a directory, or inside a read-only mount.
    fn dir_mut(&mut self, comps: &[String]) -> Result<&mut BTreeMap<String, Node>, FsError> {
        let mut node = &mut self.root;
        let mut read_only = false;
        for c in comps {
            match node {
                Node::Dir {
                    entries,
                    read_only: ro,
                    ..
                } => {
                    read_only |= *ro;
                    node = entries.get_mut(c).ok_or(FsError::NotFound)?;
                }
                Node::File { .. } => return Err(FsError::NotDir),
            }
        }
        match node {
            Node::Dir {
                entries,
                read_only: ro,
                mtime,
                ..
            } => {
                if read_only || *ro {
                    return Err(FsError::ReadOnly);
                }
                *mtime = now();
                Ok(entries)
            }
            Node::File { .. } => Err(FsError::NotDir),
        }
    }

    /// A file's contents.
    pub fn read(&self, comps: &[String]) -> Result<&[u8], FsError> {
        match self.get(comps)? {
            Node::File { data, .. } => Ok(data),
            Node::Dir { .. } => Err(FsError::IsDir),
        }
    }

    /// Writes (or appends to) a file, creating it with `mode` if missing.
    pub fn write(
        &mut self,
        comps: &[String],
        bytes: &[u8],
        append: bool,
        mode: u32,
    ) -> Result<(), FsError> {
        let Some((name, parent)) = comps.split_last() else {
            return Err(FsError::IsDir);
        };
        let entries = self.dir_mut(parent)?;
        match entries.get_mut(name) {
            Some(Node::Dir { .. }) => Err(FsError::IsDir),
            Some(Node::File { data, mtime, .. }) => {
                if !append {
                    data.clear();
                }
                data.extend_from_slice(bytes);
                *mtime = now();
                Ok(())
            }
            None => {
                entries.insert(
                    name.clone(),
                    Node::File {
                        data: bytes.to_vec(),
                        mode,
                        mtime: now(),
                    },
                );
                Ok(())
            }
        }
    }

    /// Whether a file could be written at `comps` (its directory exists
    /// and is writable, and it is no directory).
    pub fn check_write(&mut self, comps: &[String]) -> Result<(), FsError> {
        let Some((name, parent)) = comps.split_last() else {
            return Err(FsError::IsDir);
        };
        match self.dir_mut(parent)?.get(name) {
            Some(Node::Dir { .. }) => Err(FsError::IsDir),
            _ => Ok(()),
        }
    }

    /// Sets a file's or directory's modification time and mode.
    pub fn set_meta(&mut self, comps: &[String], new_mode: Option<u32>, new_mtime: u64) {
        let Some((name, parent)) = comps.split_last() else {
            return;
        };
        let Ok(entries) = self.dir_mut(parent) else {
            return;
        };
        match entries.get_mut(name) {
            Some(Node::File { mode, mtime, .. }) | Some(Node::Dir { mode, mtime, .. }) => {
                *mtime = new_mtime;
                if let Some(m) = new_mode {
                    *mode = m & 0o7777;
                }
            }
            None => {}
        }
    }

    /// Creates a directory (and its parents with `parents`; then an
    /// existing directory is no error).
    pub fn mkdir(&mut self, comps: &[String], parents: bool) -> Result<(), FsError> {
        let Some((name, parent)) = comps.split_last() else {
            return if parents {
                Ok(())
            } else {
                Err(FsError::Exists)
            };
        };
        if parents {
            match self.get(parent) {
                Ok(n) if n.is_dir() => {}
                Ok(_) => return Err(FsError::NotDir),
                Err(FsError::NotFound) => self.mkdir(parent, true)?,
                Err(e) => return Err(e),
            }
        }
        let entries = self.dir_mut(parent)?;
        match entries.get(name) {
            Some(n) if n.is_dir() && parents => Ok(()),
            Some(_) => Err(FsError::Exists),
            None => {
                entries.insert(name.clone(), Node::dir(false));
                Ok(())
            }
        }
    }

    /// Removes a file, or a directory (non-empty ones with `recursive`).
    pub fn remove(&mut self, comps: &[String], recursive: bool) -> Result<(), FsError> {
        let Some((name, parent)) = comps.split_last() else {
            return Err(FsError::ReadOnly);
        };
        let entries = self.dir_mut(parent)?;
        match entries.get(name) {
            None => Err(FsError::NotFound),
            Some(Node::Dir { entries: inner, .. }) if !recursive && !inner.is_empty() => {
                Err(FsError::NotEmpty)
            }
            Some(Node::Dir { .. }) if !recursive => Err(FsError::IsDir),
            Some(_) => {
                entries.remove(name);
                Ok(())
            }
        }
    }

    /// Mounts a directory of files at `comps` (replacing what was there):
    /// a volume. Paths in `files` are relative to the mount point.
    pub fn mount(&mut self, comps: &[String], files: &[(String, Vec<u8>, u32)], read_only: bool) {
        if let Some((_, parent)) = comps.split_last() {
            let _ = self.mkdir(parent, true);
        }
        let mut dir = Node::dir(false);
        for (rel, data, mode) in files {
            let parts = components("/", rel);
            insert_file(&mut dir, &parts, data.clone(), *mode);
        }
        if let Node::Dir { read_only: ro, .. } = &mut dir {
            *ro = read_only;
        }
        match comps.split_last() {
            None => self.root = dir,
            Some((name, parent)) => {
                // Mount points may sit inside other (read-only) mounts: place
                // the volume without the read-only check.
                let mut node = &mut self.root;
                for c in parent {
                    match node {
                        Node::Dir { entries, .. } => {
                            node = entries.entry(c.clone()).or_insert_with(|| Node::dir(false));
                        }
                        Node::File { .. } => return,
                    }
                }
                if let Node::Dir { entries, .. } = node {
                    entries.insert(name.clone(), dir);
                }
            }
        }
    }
}

fn insert_file(dir: &mut Node, parts: &[String], data: Vec<u8>, mode: u32) {
    let Node::Dir { entries, .. } = dir else {
        return;
    };
    match parts {
        [] => {}
        [name] => {
            entries.insert(
                name.clone(),
                Node::File {
                    data,
                    mode,
                    mtime: now(),
                },
            );
        }
        [first, rest @ ..] => {
            let sub = entries
                .entry(first.clone())
                .or_insert_with(|| Node::dir(false));
            insert_file(sub, rest, data, mode);
        }
    }
}

/// Trees by container ID, with the UID of their pod.
type Trees = HashMap<String, (String, Arc<Mutex<Fs>>)>;

/// The file trees of all simulated container instances, by container ID.
#[derive(Default)]
pub struct Containers {
    trees: Mutex<Trees>,
}

impl Containers {
    /// An empty registry that forgets the trees of each deleted pod, as
    /// `events` (the store's changes) report them.
    pub fn new(events: broadcast::Receiver<Arc<WatchEvent>>) -> Arc<Containers> {
        let me = Arc::new(Containers::default());
        let weak = Arc::downgrade(&me);
        tokio::spawn(forget_deleted(weak, events));
        me
    }

    fn lock(&self) -> MutexGuard<'_, Trees> {
        match self.trees.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The tree of a container instance, if it has one yet.
    pub fn get(&self, container_id: &str) -> Option<Arc<Mutex<Fs>>> {
        self.lock().get(container_id).map(|(_, fs)| fs.clone())
    }

    /// Keeps the tree of a container instance of the pod `pod_uid`
    /// (unless another was kept first) and returns the one kept.
    pub fn insert(&self, container_id: &str, pod_uid: &str, fs: Fs) -> Arc<Mutex<Fs>> {
        self.lock()
            .entry(container_id.to_string())
            .or_insert_with(|| (pod_uid.to_string(), Arc::new(Mutex::new(fs))))
            .1
            .clone()
    }

    fn forget_pod(&self, pod_uid: &str) {
        self.lock().retain(|_, (uid, _)| uid != pod_uid);
    }
}

async fn forget_deleted(
    me: std::sync::Weak<Containers>,
    mut events: broadcast::Receiver<Arc<WatchEvent>>,
) {
    loop {
        let ev = match events.recv().await {
            Ok(ev) => ev,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(me) = me.upgrade() else { return };
        if ev.event_type == EventType::Deleted && ev.key.starts_with("/core/pods/") {
            me.forget_pod(crate::object::uid(&ev.object));
        }
    }
}

/// Locks a shared tree (a poisoned lock still holds a usable tree).
pub fn lock(fs: &Mutex<Fs>) -> MutexGuard<'_, Fs> {
    match fs.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        components("/", s)
    }

    #[test]
    fn paths_normalize() {
        assert_eq!(components("/tmp", "../etc/./x"), ["etc", "x"]);
        assert_eq!(components("/", "/../.."), Vec::<String>::new());
        assert_eq!(join(&p("/a/b")), "/a/b");
        assert_eq!(join(&[]), "/");
    }

    #[test]
    fn writes_reads_and_read_only_mounts() {
        let mut fs = Fs::new();
        fs.write(&p("/tmp/a"), b"x", false, 0o644).unwrap();
        fs.write(&p("/tmp/a"), b"y", true, 0o644).unwrap();
        assert_eq!(fs.read(&p("/tmp/a")).unwrap(), b"xy");
        assert_eq!(fs.read(&p("/tmp")), Err(FsError::IsDir));
        assert_eq!(fs.read(&p("/nope")), Err(FsError::NotFound));
        fs.mount(
            &p("/etc/config"),
            &[("k".into(), b"v".to_vec(), 0o644)],
            true,
        );
        assert_eq!(fs.read(&p("/etc/config/k")).unwrap(), b"v");
        assert_eq!(
            fs.write(&p("/etc/config/k"), b"z", false, 0o644),
            Err(FsError::ReadOnly)
        );
        fs.mkdir(&p("/data/x/y"), true).unwrap();
        assert_eq!(fs.mkdir(&p("/data"), false), Err(FsError::Exists));
        assert_eq!(fs.remove(&p("/data"), false), Err(FsError::NotEmpty));
        fs.remove(&p("/data"), true).unwrap();
    }
}
