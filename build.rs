//! The commit orchestra is built from, for `--version` and the server's first line: `ORCHESTRA_COMMIT` is the commit's short hash, with `-dirty` when a tracked file differs from it, or `unknown` outside a git work tree of this crate.
//!
//! Written here rather than with `vergen`: its dirty flag is computed again
//! only when `.git/HEAD` changes, so an edit after a build kept the old
//! answer. This script asks cargo to run it again when the index or the
//! branch moves and when any tracked file changes (each one named, so that
//! untracked trees such as `tests/interop/node_modules` are never scanned).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let commit = match work_tree(&manifest) {
        Some(git) => {
            for path in git.watched() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            git.describe()
        }
        None => {
            println!("cargo:rerun-if-changed=build.rs");
            "unknown".to_string()
        }
    };
    println!("cargo:rustc-env=ORCHESTRA_COMMIT={commit}");
}

/// The git work tree whose top is this crate's folder.
struct Git {
    top: PathBuf,
    dir: PathBuf,
    common_dir: PathBuf,
}

fn git(manifest: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(manifest)
        .arg("--no-optional-locks")
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// A crate unpacked inside some other repository (a tarball in a user's
/// home, say) is not built from that repository's commit.
fn work_tree(manifest: &Path) -> Option<Git> {
    let top = PathBuf::from(git(manifest, &["rev-parse", "--show-toplevel"])?);
    let same = |a: &Path, b: &Path| a.canonicalize().ok() == b.canonicalize().ok();
    if !same(&top, manifest) {
        return None;
    }
    let absolute = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { manifest.join(p) }
    };
    Some(Git {
        top: manifest.to_path_buf(),
        dir: absolute(git(manifest, &["rev-parse", "--git-dir"])?),
        common_dir: absolute(git(manifest, &["rev-parse", "--git-common-dir"])?),
    })
}

impl Git {
    /// What moves when a commit is made, the branch switched, a file staged
    /// or a tracked file edited.
    fn watched(&self) -> Vec<PathBuf> {
        let mut paths = vec![
            self.dir.join("HEAD"),
            self.dir.join("index"),
            self.common_dir.join("packed-refs"),
        ];
        if let Some(branch) = git(&self.top, &["symbolic-ref", "-q", "HEAD"]) {
            paths.push(self.common_dir.join(branch));
        }
        if let Some(files) = git(&self.top, &["ls-files", "-z"]) {
            paths.extend(
                files
                    .split('\0')
                    .filter(|f| !f.is_empty())
                    .map(|f| self.top.join(f)),
            );
        }
        // Cargo runs a script again on every build while a path it watches
        // is missing (`packed-refs` before git packs a ref, a deleted file).
        paths.retain(|path| path.exists());
        paths
    }

    fn describe(&self) -> String {
        let Some(hash) = git(&self.top, &["rev-parse", "--short=12", "HEAD"]) else {
            return "unknown".to_string();
        };
        let dirty = git(
            &self.top,
            &["status", "--porcelain", "--untracked-files=no"],
        )
        .is_none_or(|changes| !changes.is_empty());
        if dirty { format!("{hash}-dirty") } else { hash }
    }
}
