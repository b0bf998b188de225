//! PostgreSQL for the tests: a database per test on the shared server (`PgDatabase`), connections to it, and a cluster of a test's own (`PrivateCluster`) to stop and crash.

use super::*;

/// A connection to the database of a `postgres:///NAME` `db` (a project's
/// database when the suite runs on PostgreSQL); `None` for a SQLite file.
pub(super) fn pg_client(db: &Path) -> Option<postgres::Client> {
    let name = db.to_str()?.strip_prefix("postgres:///")?;
    Some(pg_config(name).connect(postgres::NoTls).unwrap())
}

/// A PostgreSQL database made for one test on the server the `PG*`
/// variables name (`pg_virtualenv`, as `scripts/test.sh` runs the tests),
/// dropped with it. The binary finds the server through the same variables.
pub struct PgDatabase {
    name: String,
}

impl PgDatabase {
    pub fn new() -> PgDatabase {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "orchestra_it_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        pg_admin()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        PgDatabase { name }
    }

    /// A copy of `template` (which must have no session open), made by the
    /// server (`CREATE DATABASE … TEMPLATE`).
    pub fn copy_of(template: &PgDatabase) -> PgDatabase {
        let copy = PgDatabase::new();
        let mut admin = pg_admin();
        admin
            .batch_execute(&format!("DROP DATABASE {}", copy.name))
            .unwrap();
        admin
            .batch_execute(&format!(
                "CREATE DATABASE {} TEMPLATE {}",
                copy.name, template.name
            ))
            .unwrap();
        copy
    }

    /// The `--db` of this database (host, port, user and password from the
    /// environment).
    pub fn url(&self) -> String {
        format!("postgres:///{}", self.name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A connection to the server's own database, for what a database
    /// cannot do to itself (refusing connections, ending its sessions).
    pub fn admin(&self) -> postgres::Client {
        pg_admin()
    }

    /// A connection to this database, for looking at what the binary wrote.
    pub fn client(&self) -> postgres::Client {
        pg_config(&self.name).connect(postgres::NoTls).unwrap()
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let _ = pg_admin().batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name));
    }
}

fn pg_config(dbname: &str) -> postgres::Config {
    let var = |name: &str| std::env::var(name).ok();
    assert!(
        var("PGHOST").is_some(),
        "the PostgreSQL tests need a server: run them through `pg_virtualenv` \
         (`pg_virtualenv cargo test`), as scripts/test.sh does"
    );
    let mut config = postgres::Config::new();
    config
        .host(&var("PGHOST").unwrap())
        .port(var("PGPORT").map_or(5432, |p| p.parse().unwrap()))
        .user(&var("PGUSER").unwrap_or_else(|| "postgres".into()))
        .dbname(dbname);
    if let Some(password) = var("PGPASSWORD") {
        config.password(password);
    }
    config
}

fn pg_admin() -> postgres::Client {
    pg_config(&std::env::var("PGDATABASE").unwrap_or_else(|_| "postgres".into()))
        .connect(postgres::NoTls)
        .unwrap()
}

/// A PostgreSQL cluster of a test's own (a nested `pg_virtualenv`), which
/// the test may stop, crash and start without disturbing the shared one
/// that the other tests use. It is dropped, with its folder, when this is.
pub struct PrivateCluster {
    /// `pg_virtualenv`, which keeps the cluster while its command (`cat`)
    /// reads an open stdin.
    holder: std::process::Child,
    env: std::collections::HashMap<String, String>,
    /// One at a time: two `pg_virtualenv`s started together would choose
    /// the same free port.
    _alone: std::sync::MutexGuard<'static, ()>,
}

impl PrivateCluster {
    pub fn start() -> PrivateCluster {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        use std::io::BufRead;
        let mut holder = Command::new("pg_virtualenv")
            .args(["-t", "-v", "15", "sh", "-c"])
            .arg("echo '==env'; env; echo '==end'; exec cat >/dev/null")
            // The shared cluster's settings would make the new one take
            // its port, and its folders.
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .env_remove("PGSYSCONFDIR")
            .env_remove("PG_CLUSTER_CONF_ROOT")
            .env_remove("PGDATABASE")
            .env_remove("PGUSER")
            .env_remove("PGPASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("pg_virtualenv (postgresql-common) is installed by scripts/test.sh");
        let mut lines = std::io::BufReader::new(holder.stdout.take().unwrap()).lines();
        let mut env = std::collections::HashMap::new();
        let mut inside = false;
        for line in lines.by_ref() {
            let line = line.unwrap();
            match line.as_str() {
                "==env" => inside = true,
                "==end" => break,
                _ if inside => {
                    if let Some((name, value)) = line.split_once('=') {
                        env.insert(name.to_string(), value.to_string());
                    }
                }
                _ => {}
            }
        }
        assert!(
            env.contains_key("PGPORT"),
            "pg_virtualenv started no cluster"
        );
        // What pg_virtualenv prints when it drops the cluster must not
        // block it: read it away.
        std::thread::spawn(move || lines.for_each(drop));
        PrivateCluster {
            holder,
            env,
            _alone: alone,
        }
    }

    /// Its `postgres` database, as a `--db` that names every part.
    pub fn url(&self) -> String {
        let var = |name: &str| &self.env[name];
        format!(
            "postgres://{}:{}@{}:{}/postgres",
            var("PGUSER"),
            var("PGPASSWORD"),
            var("PGHOST"),
            var("PGPORT")
        )
    }

    /// `pg_ctlcluster [--mode MODE] 15 regress ACTION`.
    pub fn ctl(&self, action: &str, mode: Option<&str>) {
        let mut ctl = Command::new("pg_ctlcluster");
        if let Some(mode) = mode {
            ctl.args(["--mode", mode]);
        }
        let status = ctl
            .args(["15", "regress", action])
            .env_clear()
            .envs(&self.env)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "pg_ctlcluster {action}: {status}");
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        drop(self.holder.stdin.take());
        let _ = self.holder.wait();
    }
}
