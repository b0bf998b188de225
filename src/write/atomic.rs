//! Files replaced whole or not at all: a hidden temporary file beside the target, fsynced, renamed into place, and the folder fsynced.
//!
//! A crash at any moment leaves the old file or the new one, never a part:
//! the bytes reach the disk under a temporary name (created exclusively,
//! starting with [`TEMP_PREFIX`], so import never sees it), and only a
//! rename, atomic on every POSIX filesystem, gives them the document's name.
//! The folder is fsynced after the rename so that the new name survives a
//! power loss too. A temporary file left by a crash is removed by
//! [`remove_leftovers`] when the next server that writes starts.
//!
//! Creations and moves never replace a file: `renameat2(RENAME_NOREPLACE)`
//! on Linux, `renamex_np(RENAME_EXCL)` on macOS, and elsewhere (or on a
//! filesystem without them) a hard link, which fails when the name exists,
//! followed by the removal of the old name.
//!
//! Permissions: a replaced file keeps its permission bits (and, where the
//! process may set them, its owner and group); a new file is made with mode
//! `0o644` less the process's umask, as an editor would make it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Hidden temporary files of writes start with this (import skips hidden entries).
pub const TEMP_PREFIX: &str = ".orchestra-write-";

/// The mode of a new document before the umask.
#[cfg(unix)]
const NEW_FILE_MODE: u32 = 0o644;

/// Writes `bytes` to `file`, replacing it if it exists: a temporary file in
/// the same folder, created exclusively with the old file's permission bits
/// (`0o644` less the umask for a new file), written, fsynced, renamed over
/// `file`; then the folder is fsynced. With `make_dirs`, missing folders are
/// created first (each new folder's parent fsynced). On failure the
/// temporary file is removed and `file` is as it was.
pub fn replace(file: &Path, bytes: &[u8], make_dirs: bool) -> io::Result<()> {
    let dir = folder_of(file)?;
    if make_dirs {
        make_folders(dir)?;
    }
    let old = match fs::metadata(file) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let temp = write_temp(dir, bytes, old.as_ref())?;
    if let Err(e) = fs::rename(&temp, file) {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    sync_folder(dir)
}

/// As [`replace`] with `make_dirs`, but fails with
/// [`io::ErrorKind::AlreadyExists`] when `file` exists, atomically: the
/// temporary file is given the name only if nothing has it, so a file
/// another writer made in the meantime is never overwritten.
pub fn create(file: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = folder_of(file)?;
    make_folders(dir)?;
    let temp = write_temp(dir, bytes, None)?;
    if let Err(e) = rename_no_clobber(&temp, file) {
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    sync_folder(dir)
}

/// Renames the file `from` to `to`, which must not exist
/// ([`io::ErrorKind::AlreadyExists`]), without ever replacing it; creates
/// `to`'s missing folders and fsyncs both folders.
pub fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    let (from_dir, to_dir) = (folder_of(from)?, folder_of(to)?);
    make_folders(to_dir)?;
    rename_no_clobber(from, to)?;
    sync_folder(to_dir)?;
    if from_dir != to_dir {
        sync_folder(from_dir)?;
    }
    Ok(())
}

/// Removes `file` and fsyncs its folder.
pub fn remove(file: &Path) -> io::Result<()> {
    fs::remove_file(file)?;
    sync_folder(folder_of(file)?)
}

/// Removes the temporary files a crash left under `root`, at any depth
/// (hidden folders are not entered, symlinks not followed, folders that
/// cannot be listed passed over); returns how many. A missing `root` has
/// none.
///
/// Call it under the project's write lock: another process's write in
/// progress has a temporary file too. Give it the prefix folders rather
/// than the project, which may hold large trees no write goes into.
pub fn remove_leftovers(root: &Path) -> io::Result<usize> {
    let mut removed = 0;
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = match fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if folder == root && e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) if folder == root => return Err(e),
            Err(_) => continue,
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            // Not followed: the type of the entry itself.
            let kind = entry.file_type()?;
            if name.starts_with(TEMP_PREFIX.as_bytes()) && kind.is_file() {
                match fs::remove_file(entry.path()) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            } else if kind.is_dir() && !name.starts_with(b".") {
                folders.push(entry.path());
            }
        }
    }
    Ok(removed)
}

fn folder_of(file: &Path) -> io::Result<&Path> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => Ok(dir),
        Some(_) => Ok(Path::new(".")),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file path", file.display()),
        )),
    }
}

/// A new hidden file in `dir` holding `bytes`, fsynced, with the permission
/// bits (and owner) of `old`, or those of a new file. Removed on failure.
fn write_temp(
    dir: &Path,
    bytes: &[u8],
    old: Option<&fs::Metadata>,
) -> io::Result<std::path::PathBuf> {
    let temp = dir.join(format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple()));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        // The old mode from the start (less the umask, set exactly below),
        // so the new bytes are never readable by more than the old ones.
        let mode = old.map_or(NEW_FILE_MODE, |meta| meta.permissions().mode() & 0o7777);
        options.mode(mode);
    }
    let mut handle = options.open(&temp)?;
    let written = (|| {
        handle.write_all(bytes)?;
        if let Some(old) = old {
            keep_owner(&handle, old);
            handle.set_permissions(old.permissions())?;
        }
        handle.sync_all()
    })();
    drop(handle);
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Gives the new file the old one's owner and group where the process may
/// (as root, or a group it belongs to); otherwise it is the writer's.
#[cfg(unix)]
fn keep_owner(file: &File, old: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    let Ok(new) = file.metadata() else {
        return;
    };
    if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
        let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()))
            .or_else(|_| std::os::unix::fs::fchown(file, None, Some(old.gid())));
    }
}

#[cfg(not(unix))]
fn keep_owner(_file: &File, _old: &fs::Metadata) {}

/// Creates the missing folders of `dir`, top down, fsyncing the parent of
/// each new one so that it survives a crash.
fn make_folders(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(dir);
    while let Some(folder) = next.filter(|f| !f.as_os_str().is_empty()) {
        match fs::symlink_metadata(folder) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(folder),
            Err(e) => return Err(e),
        }
        next = folder.parent();
    }
    for folder in missing.into_iter().rev() {
        match fs::create_dir(folder) {
            Ok(()) => sync_folder(folder_of(folder)?)?,
            // Made by another writer in the meantime.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && folder.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes the folder's entries (a rename, a new name, a removal) durable.
#[cfg(unix)]
fn sync_folder(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Windows cannot open a folder as a file; its renames are journaled.
#[cfg(not(unix))]
fn sync_folder(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Renames `from` to `to` unless `to` exists (`AlreadyExists`), atomically.
fn rename_no_clobber(from: &Path, to: &Path) -> io::Result<()> {
    match rename_exclusive(from, to) {
        Some(Err(e)) if !unsupported(&e) => Err(e),
        Some(Ok(())) => Ok(()),
        _ => rename_by_link(from, to),
    }
}

/// The exclusive rename where the system has none: a second name for the
/// file, which fails when `to` exists, then the first name goes. Between the
/// two a crash leaves both names: for a temporary file, a leftover removed
/// at the next start; for a move, the document under both names.
fn rename_by_link(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    if let Err(e) = fs::remove_file(from) {
        let _ = fs::remove_file(to);
        return Err(e);
    }
    Ok(())
}

/// Whether the filesystem or system lacks the exclusive rename.
fn unsupported(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(
            e.raw_os_error(),
            Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP)
        ) || e.kind() == io::ErrorKind::Unsupported
    }
    #[cfg(not(unix))]
    {
        e.kind() == io::ErrorKind::Unsupported
    }
}

/// The system's exclusive rename, `None` where there is none.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn rename_exclusive(from: &Path, to: &Path) -> Option<io::Result<()>> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
    };
    let (from, to) = match (path(from), path(to)) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(e), _) | (_, Err(e)) => return Some(Err(e)),
    };
    // SAFETY: both pointers are NUL-terminated strings that outlive the call.
    #[cfg(target_os = "linux")]
    let status = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    // SAFETY: as above.
    #[cfg(target_os = "macos")]
    let status = unsafe { libc::renamex_np(from.as_ptr(), to.as_ptr(), libc::RENAME_EXCL) };
    Some(if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn rename_exclusive(_from: &Path, _to: &Path) -> Option<io::Result<()>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The temporary files directly in `dir`.
    fn temps_in(dir: &Path) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .map(|e| e.unwrap().path())
                    .filter(|p| {
                        p.file_name()
                            .unwrap()
                            .to_string_lossy()
                            .starts_with(TEMP_PREFIX)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn replace_writes_the_bytes_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.md");
        replace(&file, b"one\r\n", false).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"one\r\n");
        replace(&file, b"two", false).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        replace(&file, b"", false).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"");
        assert!(temps_in(dir.path()).is_empty());
    }

    #[test]
    fn replace_makes_folders_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/c/x.md");
        let e = replace(&file, b"x", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!dir.path().join("a").exists());
        replace(&file, b"x", true).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"x");
        assert!(temps_in(&dir.path().join("a/b/c")).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn permission_bits_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for wanted in [0o600, 0o755, 0o640, 0o444] {
            let file = dir.path().join(format!("{wanted:o}.md"));
            fs::write(&file, "old").unwrap();
            fs::set_permissions(&file, fs::Permissions::from_mode(wanted)).unwrap();
            replace(&file, b"new", false).unwrap();
            assert_eq!(mode(&file), wanted, "{wanted:o}");
            assert_eq!(fs::read(&file).unwrap(), b"new");
        }
        // A new file: 0o644 less the umask, which is never more than 0o644.
        let file = dir.path().join("new.md");
        replace(&file, b"x", false).unwrap();
        assert_eq!(mode(&file) & !0o644, 0);
        create(&dir.path().join("created.md"), b"x").unwrap();
        assert_eq!(mode(&dir.path().join("created.md")) & !0o644, 0);
    }

    #[test]
    fn create_refuses_an_existing_file_and_leaves_it_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("new/folder/x.md");
        create(&file, b"first").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"first");
        let e = create(&file, b"second").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&file).unwrap(), b"first");
        assert!(temps_in(file.parent().unwrap()).is_empty());
    }

    /// Many creators of one name at once: exactly one wins, the file holds
    /// its bytes whole, and no temporary file stays.
    #[test]
    fn concurrent_creates_of_one_name_have_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.md");
        let results: Vec<(usize, io::Result<()>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..16)
                .map(|i| {
                    let file = &file;
                    scope.spawn(move || (i, create(file, format!("writer {i}").as_bytes())))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<usize> = results
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(winners.len(), 1);
        for (_, r) in &results {
            if let Err(e) = r {
                assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
            }
        }
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            format!("writer {}", winners[0])
        );
        assert!(temps_in(dir.path()).is_empty());
    }

    #[test]
    fn rename_new_moves_and_refuses_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.md"), dir.path().join("b.md"));
        fs::write(&a, "a").unwrap();
        fs::write(&b, "b").unwrap();
        let e = rename_new(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&a).unwrap(), b"a");
        assert_eq!(fs::read(&b).unwrap(), b"b");

        let moved = dir.path().join("deep/er/c.md");
        rename_new(&a, &moved).unwrap();
        assert!(!a.exists());
        assert_eq!(fs::read(&moved).unwrap(), b"a");

        let e = rename_new(&dir.path().join("missing.md"), &a).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!a.exists());
    }

    /// The fallback for filesystems without an exclusive rename.
    #[test]
    fn the_hard_link_fallback_refuses_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        fs::write(path("a"), "a").unwrap();
        fs::write(path("b"), "b").unwrap();
        let e = rename_by_link(&path("a"), &path("b")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(path("a")).unwrap(), b"a");
        assert_eq!(fs::read(path("b")).unwrap(), b"b");
        rename_by_link(&path("a"), &path("c")).unwrap();
        assert!(!path("a").exists());
        assert_eq!(fs::read(path("c")).unwrap(), b"a");
        assert!(unsupported(&io::Error::from(io::ErrorKind::Unsupported)));
        assert!(!unsupported(&io::Error::from(io::ErrorKind::AlreadyExists)));
    }

    #[test]
    fn remove_removes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.md");
        fs::write(&file, "x").unwrap();
        remove(&file).unwrap();
        assert!(!file.exists());
        assert_eq!(remove(&file).unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn remove_leftovers_removes_only_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("docs");
        let files = [
            (format!("{TEMP_PREFIX}1"), false),
            (format!("a/{TEMP_PREFIX}2"), false),
            (format!("a/b/c/{TEMP_PREFIX}3"), false),
            ("a/x.md".to_string(), true),
            (".orchestra-write.md".to_string(), true),
            ("orchestra-write-4".to_string(), true),
            (format!("a/x{TEMP_PREFIX}5"), true),
            // Hidden folders are not entered.
            (format!(".git/{TEMP_PREFIX}6"), true),
        ];
        for (rel, _) in &files {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, "x").unwrap();
        }
        // A folder with the prefix is not a temporary file.
        fs::create_dir_all(root.join(format!("{TEMP_PREFIX}dir"))).unwrap();
        #[cfg(unix)]
        {
            // Links are neither followed nor removed.
            let outside = dir.path().join("outside");
            fs::create_dir_all(&outside).unwrap();
            fs::write(outside.join(format!("{TEMP_PREFIX}7")), "x").unwrap();
            std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
            std::os::unix::fs::symlink(
                outside.join(format!("{TEMP_PREFIX}7")),
                root.join(format!("{TEMP_PREFIX}link")),
            )
            .unwrap();
            assert_eq!(remove_leftovers(&root).unwrap(), 3);
            assert!(outside.join(format!("{TEMP_PREFIX}7")).exists());
            assert!(fs::symlink_metadata(root.join(format!("{TEMP_PREFIX}link"))).is_ok());
        }
        #[cfg(not(unix))]
        assert_eq!(remove_leftovers(&root).unwrap(), 3);
        for (rel, kept) in &files {
            assert_eq!(root.join(rel).exists(), *kept, "{rel}");
        }
        assert!(root.join(format!("{TEMP_PREFIX}dir")).is_dir());
        assert_eq!(remove_leftovers(&root).unwrap(), 0);
        assert_eq!(remove_leftovers(&dir.path().join("missing")).unwrap(), 0);
    }

    /// Failures after the temporary file was made remove it again.
    #[test]
    fn failures_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a folder with something in it: the rename fails
        // after the bytes were written and fsynced.
        let folder = dir.path().join("x.md");
        fs::create_dir_all(folder.join("inside")).unwrap();
        assert!(replace(&folder, b"x", false).is_err());
        assert!(folder.join("inside").is_dir());
        assert!(temps_in(dir.path()).is_empty());
        assert!(create(&folder, b"x").is_err());
        assert!(temps_in(dir.path()).is_empty());

        // The parent is a regular file: nothing can be made.
        let plain = dir.path().join("plain");
        fs::write(&plain, "p").unwrap();
        for make_dirs in [false, true] {
            assert!(replace(&plain.join("x.md"), b"x", make_dirs).is_err());
        }
        assert!(create(&plain.join("sub/x.md"), b"x").is_err());
        assert!(rename_new(&dir.path().join("missing"), &plain.join("x.md")).is_err());
        assert_eq!(fs::read(&plain).unwrap(), b"p");
        assert!(temps_in(dir.path()).is_empty());
    }

    /// A read-only folder: only meaningful when not running as root, which
    /// permission bits do not stop.
    #[cfg(unix)]
    #[test]
    fn a_read_only_folder_is_left_as_it_was() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        fs::create_dir(&locked).unwrap();
        fs::write(locked.join("x.md"), "old").unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
        let result = replace(&locked.join("x.md"), b"new", false);
        let as_root = result.is_ok();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        if !as_root {
            assert_eq!(fs::read(locked.join("x.md")).unwrap(), b"old");
        }
        assert!(temps_in(&locked).is_empty());
    }
}
