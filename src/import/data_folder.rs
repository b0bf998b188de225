//! The `.orchestra/` folder that orchestra keeps in a project: where the default database lives, and the `.gitignore` of `*` that keeps all of it out of git (as `.venv/` and `.pytest_cache/` do) without touching the user's own `.gitignore`.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// The folder's name, in the project or the folder a command runs in.
pub const NAME: &str = ".orchestra";

/// The database a project's `.orchestra/` holds, under `folder`.
pub fn default_db(folder: &Path) -> PathBuf {
    folder.join(NAME).join("orchestra.db")
}

/// When the database file `db` lives in a folder named `.orchestra`, gives
/// that folder a `.gitignore` that ignores everything in it, unless it has
/// one already (which is left as it is). A database elsewhere is the user's
/// to place, and its folder is not touched.
pub fn keep_out_of_git(db: &Path) -> std::io::Result<()> {
    let Some(folder) = db.parent().filter(|f| f.file_name() == Some(NAME.as_ref())) else {
        return Ok(());
    };
    let ignore = folder.join(".gitignore");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
    {
        Ok(mut file) => file.write_all(b"# made by orchestra: its database, never committed\n*\n"),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_orchestra_folder_gets_a_gitignore_and_an_existing_one_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let ours = default_db(tmp.path());
        std::fs::create_dir_all(ours.parent().unwrap()).unwrap();
        keep_out_of_git(&ours).unwrap();
        let ignore = tmp.path().join(".orchestra/.gitignore");
        let made = std::fs::read_to_string(&ignore).unwrap();
        assert!(made.lines().any(|line| line == "*"), "{made:?}");

        std::fs::write(&ignore, "mine\n").unwrap();
        keep_out_of_git(&ours).unwrap();
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "mine\n");

        let elsewhere = tmp.path().join("dbs").join("x.db");
        std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
        keep_out_of_git(&elsewhere).unwrap();
        assert!(!tmp.path().join("dbs/.gitignore").exists());
        keep_out_of_git(Path::new("x.db")).unwrap();
    }
}
