//! The PostgreSQL server and PgBouncer the tests run on: started by `cargo xtask test`
//! (or `cargo xtask with-postgres …`), found through `SPOOL_TEST_POSTGRES` and
//! `SPOOL_TEST_PGBOUNCER`. Every test gets databases of its own.

use std::sync::atomic::{AtomicU32, Ordering};

/// How a test reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Straight to PostgreSQL.
    Direct,
    /// Through PgBouncer in transaction pooling mode.
    Pooler,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: the PostgreSQL tests run on the server `cargo xtask test` \
             starts; run them with `cargo xtask with-postgres cargo test -p spool-host \
             --test suite`"
        )
    })
}

/// The server's URL as its superuser, on database `database`.
pub fn admin_url(database: &str) -> String {
    with_database(&var("SPOOL_TEST_POSTGRES"), database)
}

/// The URL of `database` reached `via` the server or the pooler.
pub fn url(database: &str, via: Via) -> String {
    match via {
        Via::Direct => admin_url(database),
        Via::Pooler => with_database(&var("SPOOL_TEST_PGBOUNCER"), database),
    }
}

/// The role that must give a password: `(user, password)`.
pub fn password_role() -> (String, String) {
    let text = var("SPOOL_TEST_POSTGRES_PASSWORD_USER");
    let (user, password) = text.split_once(':').expect("user:password");
    (user.to_owned(), password.to_owned())
}

/// A loopback port nobody listens on (the system's choice, let go at once).
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Whether the directory `dir` is empty (nothing was created in it).
pub fn is_empty_dir(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir)
        .expect("read the directory")
        .next()
        .is_none()
}

/// The server's `host:port`.
pub fn host_port() -> String {
    let url = var("SPOOL_TEST_POSTGRES");
    let rest = url.split_once('@').expect("a user in the URL").1;
    rest.split('/').next().expect("host").to_owned()
}

fn with_database(url: &str, database: &str) -> String {
    let base = url.rsplit_once('/').expect("a database in the URL").0;
    format!("{base}/{database}")
}

/// A superuser connection to the server's `postgres` database.
pub fn admin() -> postgres::Client {
    postgres::Client::connect(&admin_url("postgres"), postgres::NoTls)
        .expect("connect to the test server as its superuser")
}

/// Creates an empty database for `label` (unique in this run) and returns its name.
pub fn fresh_database(label: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let name = format!(
        "t{}_{}_{clean}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    admin()
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .expect("create a test database");
    name
}

/// Whether a database of this name exists on the server.
pub fn database_exists(name: &str) -> bool {
    admin()
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .expect("query pg_database")
        .is_some()
}

/// Ends every other connection to `database` (`pg_terminate_backend`); returns how many.
pub fn terminate_connections(database: &str) -> i64 {
    let row = admin()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&database],
        )
        .expect("terminate the database's connections");
    row.get(0)
}
