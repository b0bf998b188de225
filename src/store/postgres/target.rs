//! Where a PostgreSQL store lives: a `--db postgres://…` URL, the sources of its password, and how it is shown (never with the password).
//!
//! The `postgres` crate reads no `PG*` environment variable, so this module
//! does what libpq does for the ones a team's scripts use: `PGHOST`,
//! `PGPORT`, `PGUSER`, `PGDATABASE` fill what the URL leaves out, and the
//! password comes from the first of: the URL, `--db-password-file`,
//! `PGPASSWORD`, the password file (`PGPASSFILE`, default `~/.pgpass`).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use postgres::Config;
use postgres::config::Host;

/// A PostgreSQL database to connect to.
#[derive(Clone)]
pub struct PgTarget {
    config: Config,
    /// `postgres://user@host:port/dbname`: for messages and logs.
    shown: String,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Two targets are the same database when they are shown the same (the
/// password aside).
impl PartialEq for PgTarget {
    fn eq(&self, other: &PgTarget) -> bool {
        self.shown == other.shown
    }
}

impl std::fmt::Display for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Looks up an environment variable; `None` when unset or empty.
pub type VarLookup = Box<dyn Fn(&str) -> Option<String>>;

/// The environment a target is resolved in: the variables and the home
/// folder (passed in, so that tests need not change the process's).
pub struct PgEnv {
    pub var: VarLookup,
    pub home: Option<PathBuf>,
}

impl PgEnv {
    /// The process's environment.
    pub fn process() -> PgEnv {
        PgEnv {
            var: Box::new(|name| std::env::var(name).ok().filter(|v| !v.is_empty())),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }
}

impl PgTarget {
    /// Whether `--db` names a PostgreSQL database rather than a SQLite file.
    pub fn is_url(db: &str) -> bool {
        db.starts_with("postgres://") || db.starts_with("postgresql://")
    }

    /// The target of `url`, its password from the URL or, failing that,
    /// from `password_file` (the first line), `PGPASSWORD` or the password
    /// file. The errors never quote the URL, which may hold a password.
    pub fn resolve(url: &str, password_file: Option<&Path>, env: &PgEnv) -> Result<PgTarget> {
        let mut config = Config::from_str(url)
            .map_err(|e| anyhow::anyhow!("the --db URL is not a valid PostgreSQL URL ({e})"))?;
        if config.get_hosts().is_empty() {
            config.host(&(env.var)("PGHOST").unwrap_or_else(|| "localhost".to_string()));
        }
        if config.get_ports().is_empty()
            && let Some(port) = (env.var)("PGPORT")
        {
            config.port(
                port.parse()
                    .with_context(|| format!("PGPORT is not a port number: {port}"))?,
            );
        }
        if config.get_user().is_none() {
            match (env.var)("PGUSER").or_else(|| (env.var)("USER")) {
                Some(user) => config.user(&user),
                None => bail!("the --db URL names no user, and neither PGUSER nor USER is set"),
            };
        }
        if config.get_dbname().is_none() {
            let dbname = (env.var)("PGDATABASE")
                .unwrap_or_else(|| config.get_user().unwrap_or_default().to_string());
            config.dbname(&dbname);
        }
        config.application_name("orchestra");
        let mut target = PgTarget {
            shown: String::new(),
            config,
        };
        target.shown = target.describe();
        if target.config.get_password().is_none()
            && let Some(password) = target.password(password_file, env)?
        {
            target.config.password(password);
        }
        Ok(target)
    }

    /// The connection settings, password included.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The first host, as the password file names it (`localhost` for a
    /// Unix socket, as libpq does).
    fn host(&self) -> String {
        match self.config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            _ => "localhost".to_string(),
        }
    }

    fn port(&self) -> u16 {
        self.config.get_ports().first().copied().unwrap_or(5432)
    }

    fn user(&self) -> &str {
        self.config.get_user().unwrap_or_default()
    }

    fn dbname(&self) -> &str {
        self.config.get_dbname().unwrap_or_default()
    }

    fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(host)) if host.contains(':') => format!("[{host}]"),
            Some(Host::Tcp(host)) => host.clone(),
            Some(Host::Unix(path)) => path.display().to_string(),
            None => String::new(),
        };
        format!(
            "postgres://{}@{host}:{}/{}",
            self.user(),
            self.port(),
            self.dbname()
        )
    }

    /// The password from `password_file`, `PGPASSWORD` or the password
    /// file, in that order; `None` when none has one.
    fn password(&self, password_file: Option<&Path>, env: &PgEnv) -> Result<Option<String>> {
        if let Some(path) = password_file {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!("cannot read the --db-password-file {}", path.display())
            })?;
            let password = text.lines().next().unwrap_or_default();
            if password.is_empty() {
                bail!("the --db-password-file {} is empty", path.display());
            }
            return Ok(Some(password.to_string()));
        }
        if let Some(password) = (env.var)("PGPASSWORD") {
            return Ok(Some(password));
        }
        let passfile = match (env.var)("PGPASSFILE") {
            Some(path) => PathBuf::from(path),
            None => match &env.home {
                Some(home) => home.join(".pgpass"),
                None => return Ok(None),
            },
        };
        let Ok(text) = std::fs::read_to_string(&passfile) else {
            return Ok(None);
        };
        if !private(&passfile) {
            tracing::warn!(
                "the password file {} is readable by others (it should be 0600): not used",
                passfile.display()
            );
            return Ok(None);
        }
        let port = self.port().to_string();
        let wanted = [
            self.host(),
            port,
            self.dbname().to_string(),
            self.user().to_string(),
        ];
        Ok(text
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(pgpass_fields)
            .find(|fields| {
                fields.len() == 5
                    && fields[..4]
                        .iter()
                        .zip(&wanted)
                        .all(|(field, want)| field == "*" || field == want)
            })
            .map(|mut fields| fields.swap_remove(4)))
    }
}

/// Whether only the owner may read the file at `path`.
fn private(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 == 0)
}

/// The fields of a password file's line: `host:port:database:user:password`,
/// where `\:` is a colon and `\\` a backslash.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("one field").extend(chars.next()),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(vars: &[(&str, &str)], home: Option<&Path>) -> PgEnv {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        PgEnv {
            var: Box::new(move |name| vars.get(name).cloned()),
            home: home.map(Path::to_path_buf),
        }
    }

    fn password(target: &PgTarget) -> Option<String> {
        target
            .config()
            .get_password()
            .map(|p| String::from_utf8(p.to_vec()).unwrap())
    }

    #[test]
    fn a_url_is_told_from_a_path() {
        for (db, is_url) in [
            ("postgres://u@h/db", true),
            ("postgresql://h", true),
            ("orchestra.db", false),
            ("./postgres/x.db", false),
            ("/var/lib/postgres://x", false),
        ] {
            assert_eq!(PgTarget::is_url(db), is_url, "{db}");
        }
    }

    #[test]
    fn the_url_is_shown_without_its_password_and_what_it_omits_comes_from_the_environment() {
        let none = env(&[], None);
        let target =
            PgTarget::resolve("postgres://ann:s3cret@db.example:6543/backlog", None, &none)
                .unwrap();
        assert_eq!(target.to_string(), "postgres://ann@db.example:6543/backlog");
        assert_eq!(
            format!("{target:?}"),
            "postgres://ann@db.example:6543/backlog"
        );
        assert_eq!(password(&target).as_deref(), Some("s3cret"));

        let vars = env(
            &[
                ("PGHOST", "pg.local"),
                ("PGPORT", "5499"),
                ("PGUSER", "bob"),
                ("PGDATABASE", "team"),
            ],
            None,
        );
        let target = PgTarget::resolve("postgresql://", None, &vars).unwrap();
        assert_eq!(target.to_string(), "postgres://bob@pg.local:5499/team");
        // The database defaults to the user's name, as in libpq.
        let target =
            PgTarget::resolve("postgres://h", None, &env(&[("USER", "carl")], None)).unwrap();
        assert_eq!(target.to_string(), "postgres://carl@h:5432/carl");
    }

    #[test]
    fn a_bad_url_is_refused_without_quoting_it() {
        let err = PgTarget::resolve("postgres://u:hunter2@h:notaport/db", None, &env(&[], None))
            .unwrap_err();
        let message = format!("{err:#}");
        assert!(message.contains("not a valid PostgreSQL URL"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn the_password_comes_from_the_url_then_the_file_then_pgpassword_then_pgpass() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\nignored\n").unwrap();
        let pgpass = dir.path().join(".pgpass");
        std::fs::write(
            &pgpass,
            "# comment\nother:5432:*:ann:wrong\nh:5432:*:ann:from\\:pgpass\\\\\n*:*:*:*:fallback\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let home = Some(dir.path());
        let with_var = env(&[("PGPASSWORD", "from-env")], home);
        let without = env(&[], home);
        let cases: [(&str, Option<&Path>, &PgEnv, &str); 5] = [
            (
                "postgres://ann:from-url@h/db",
                Some(&file),
                &with_var,
                "from-url",
            ),
            ("postgres://ann@h/db", Some(&file), &with_var, "from-file"),
            ("postgres://ann@h/db", None, &with_var, "from-env"),
            ("postgres://ann@h/db", None, &without, "from:pgpass\\"),
            ("postgres://zoe@elsewhere:7/db", None, &without, "fallback"),
        ];
        for (url, file, env, expected) in cases {
            let target = PgTarget::resolve(url, file, env).unwrap();
            assert_eq!(password(&target).as_deref(), Some(expected), "{url}");
        }
        // A password file that others may read is not used (as libpq).
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let target = PgTarget::resolve("postgres://ann@h/db", None, &without).unwrap();
        assert_eq!(password(&target), None);
        // PGPASSFILE names another file.
        let other = env(&[("PGPASSFILE", file.to_str().unwrap())], None);
        assert_eq!(
            password(&PgTarget::resolve("postgres://ann@h/db", None, &other).unwrap()),
            None,
            "a line that is not five fields matches nothing"
        );
    }

    #[test]
    fn a_missing_or_empty_password_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        for path in [dir.path().join("missing"), empty] {
            let err =
                PgTarget::resolve("postgres://u@h/db", Some(&path), &env(&[], None)).unwrap_err();
            assert!(
                format!("{err:#}").contains(&path.display().to_string()),
                "{err:#}"
            );
        }
    }
}
