//! The project's write lock: `.orchestra/write.lock` in the project folder, locked exclusively for the whole of one write, so that the writes of any number of orchestra processes to one project happen one at a time.
//!
//! An advisory lock of the operating system (`flock` on Unix, through
//! `std::fs::File::lock`): released when the holder drops it or its process
//! dies, so a crashed writer never leaves the project locked. Imports do not
//! take it; they serialize with writes on the database's own write lock,
//! which a write holds from before it reads the file until its commit.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

use crate::import::data_folder;

/// The lock file's name in the project's `.orchestra/`.
pub const FILE: &str = "write.lock";

/// Held while one write runs; dropping it lets the next one in.
#[derive(Debug)]
pub struct ProjectLock {
    _file: File,
}

impl ProjectLock {
    /// Waits for the lock of the project folder `root`, making its
    /// `.orchestra/` (kept out of git) when there is none.
    pub fn acquire(root: &Path) -> io::Result<ProjectLock> {
        let folder = root.join(data_folder::NAME);
        std::fs::create_dir_all(&folder)?;
        let path = folder.join(FILE);
        // Best effort: a folder that cannot take a .gitignore still locks.
        let _ = data_folder::keep_out_of_git(&path);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        file.lock()?;
        Ok(ProjectLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn one_holder_at_a_time() {
        let tmp = tempfile::tempdir().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (root, inside, most) = (tmp.path().to_path_buf(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _lock = ProjectLock::acquire(&root).unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(".orchestra/.gitignore")).unwrap(),
            "# made by orchestra: its database, never committed\n*\n"
        );
    }
}
