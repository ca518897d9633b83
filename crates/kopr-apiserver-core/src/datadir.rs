//! The data directory: created private (0700), and held by one server at a
//! time through an exclusive lock on `DIR/apiserver.lock`, which names the
//! holder's pid and address so that a second server refuses with both.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The lock file's name inside the data directory.
pub const LOCK_FILE: &str = "apiserver.lock";

/// Why a data directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    /// Another server holds the directory.
    #[error(
        "data directory {} is in use by another kopr apiserver (pid {pid}, {address}); stop it or choose another directory",
        dir.display()
    )]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// The holder's pid, as it recorded it.
        pid: String,
        /// The holder's address, as it recorded it.
        address: String,
    },
    /// The directory or its lock file could not be made or read.
    #[error("data directory {}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

/// A data directory held by this process until dropped.
#[derive(Debug)]
pub struct DataDir {
    dir: PathBuf,
    lock: File,
}

impl DataDir {
    /// Creates `dir` if needed (mode 0700; an existing one is made private
    /// too) and takes its lock.
    ///
    /// # Errors
    /// [`DataDirError::InUse`] when another process holds the lock.
    pub fn acquire(dir: &Path) -> Result<DataDir, DataDirError> {
        let io = |source| DataDirError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        if dir.exists() {
            private_dir(dir).map_err(io)?;
        } else {
            std::fs::create_dir_all(dir).map_err(io)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
        }
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = lock.read_to_string(&mut text);
                let field = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::to_string)
                        .unwrap_or_else(|| "unknown".into())
                };
                return Err(DataDirError::InUse {
                    dir: dir.to_path_buf(),
                    pid: field("pid="),
                    address: field("address="),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let mut held = DataDir {
            dir: dir.to_path_buf(),
            lock,
        };
        held.record("starting").map_err(io)?;
        Ok(held)
    }

    /// Records this process and the address it serves at in the lock file.
    ///
    /// # Errors
    /// Writing the lock file failed.
    pub fn record(&mut self, address: &str) -> std::io::Result<()> {
        self.lock.set_len(0)?;
        self.lock.seek(SeekFrom::Start(0))?;
        write!(self.lock, "pid={}\naddress={address}\n", std::process::id())?;
        self.lock.flush()
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

/// Makes an existing directory private (0700), warning when its mode was
/// looser: for the data directory and its `pki`.
///
/// # Errors
/// Its mode could not be read or set.
pub fn private_dir(path: &Path) -> std::io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            dir = %path.display(),
            mode = format!("{mode:o}"),
            "the directory was readable by others; its mode is now 0700"
        );
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Creates `path` empty with mode 0600 unless it exists, and makes it 0600
/// if it does: for files that hold secrets (the database).
///
/// # Errors
/// The file could not be created or its mode set.
pub fn private_file(path: &Path) -> std::io::Result<()> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_and_address() {
        let tmp = std::env::temp_dir().join(format!("kopr-datadir-{}", std::process::id()));
        let dir = tmp.join("data");
        let mut first = DataDir::acquire(&dir).expect("first");
        first.record("https://127.0.0.1:1234").expect("recorded");
        let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        match DataDir::acquire(&dir) {
            Err(e @ DataDirError::InUse { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&std::process::id().to_string()), "{text}");
                assert!(text.contains("https://127.0.0.1:1234"), "{text}");
                assert!(text.contains(&dir.display().to_string()), "{text}");
            }
            other => panic!("expected InUse, got {other:?}"),
        }
        drop(first);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("loosened");
        DataDir::acquire(&dir).expect("free again");
        let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "a loose directory is tightened");
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
