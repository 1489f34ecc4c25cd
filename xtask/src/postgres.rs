//! A throwaway PostgreSQL server and a PgBouncer in front of it, for the tests and
//! benchmarks that run on a server: Debian's packages (installed when missing),
//! `initdb` on a temporary directory as the `postgres` user, loopback only, random
//! ports. [`Servers`] stops both and removes the directory when dropped, so every exit
//! path of a step that holds it (success, failure, a panic) stops them; a watchdog in a
//! session of its own does the same once the process is gone without dropping it (a
//! signal, `kill -9`; `xtask/tests/servers.rs`).
//!
//! The tests find them through the environment ([`Servers::env`]):
//! `SPOOL_TEST_POSTGRES` is the server's URL as its superuser (`postgres`, trusted on
//! loopback; the tests create a database for each case), `SPOOL_TEST_PGBOUNCER` the
//! pooler's (transaction pooling, every database name passed through), and
//! `SPOOL_TEST_POSTGRES_PASSWORD_USER` a role that must log in with a password
//! (`user:password`), for the failed-authentication tests, and
//! `SPOOL_TEST_POSTGRES_CTL` the server's `pg_ctl` as a shell command to which `stop`,
//! `start` or `restart` is added (for the tests that run alone, `--ignored`: they end
//! every connection).

use std::path::{Path, PathBuf};

use crate::cmd::Step;

/// The role that must give its password, and the password.
const PASSWORD_ROLE: (&str, &str) = ("spool_password_role", "the-right-password");

/// A running server and pooler.
pub(crate) struct Servers {
    dir: PathBuf,
    bin: PathBuf,
    postgres_port: u16,
    pgbouncer_port: u16,
    /// The port of a hot standby streaming from the server, when there is one
    /// ([`Servers::start_with_standby`]).
    standby_port: Option<u16>,
}

impl Servers {
    /// Installs what is missing, then starts both.
    pub(crate) fn start() -> Result<Self, String> {
        let bin = match postgres_bin() {
            Some(bin) if Path::new("/usr/sbin/pgbouncer").exists() => bin,
            _ => {
                crate::setup::apt_install(&["postgresql", "pgbouncer"])?;
                postgres_bin().ok_or("no initdb under /usr/lib/postgresql/*/bin after install")?
            }
        };
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "spool-postgres-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut servers = Servers {
            dir,
            bin,
            postgres_port: 0,
            pgbouncer_port: 0,
            standby_port: None,
        };
        // From here on, a failure drops `servers`, which stops what did start; and if
        // this process ends without dropping it (a signal, `kill -9`), its watchdog does.
        servers.watch()?;
        servers.start_postgres()?;
        servers.start_pgbouncer()?;
        eprintln!(
            "postgres: PostgreSQL on 127.0.0.1:{}, PgBouncer (transaction pooling) on \
             127.0.0.1:{}, in {}",
            servers.postgres_port,
            servers.pgbouncer_port,
            servers.dir.display()
        );
        Ok(servers)
    }

    /// The variables the tests read (see the module's documentation).
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SPOOL_TEST_POSTGRES", self.url()),
            (
                "SPOOL_TEST_PGBOUNCER",
                format!(
                    "postgres://postgres@127.0.0.1:{}/postgres",
                    self.pgbouncer_port
                ),
            ),
            (
                "SPOOL_TEST_POSTGRES_PASSWORD_USER",
                format!("{}:{}", PASSWORD_ROLE.0, PASSWORD_ROLE.1),
            ),
            (
                "SPOOL_TEST_POSTGRES_CTL",
                format!(
                    "runuser -u postgres -- {} -w -t 60 -m fast -D {} -l {}",
                    self.bin.join("pg_ctl").display(),
                    self.data().display(),
                    self.dir.join("postgres.log").display()
                ),
            ),
        ]
    }

    /// The server's URL as its superuser, on its `postgres` database.
    pub(crate) fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.postgres_port
        )
    }

    /// The servers, and a hot standby of the PostgreSQL server: `pg_basebackup -R`, on
    /// a port of its own, and the server made to wait for it at every commit
    /// (`synchronous_standby_names = '*'`), so an acknowledged commit is on both. For
    /// the failover tests, which kill the server: they get its own pair.
    pub(crate) fn start_with_standby() -> Result<Self, String> {
        let mut servers = Servers::start()?;
        let port = free_port()?;
        let pair = Pair {
            dir: servers.dir.clone(),
            bin: servers.bin.clone(),
        };
        pair.make_standby(STANDBY, servers.postgres_port, port)?;
        pair.require_synchronous_standby(servers.postgres_port)?;
        servers.standby_port = Some(port);
        eprintln!("postgres: hot standby on 127.0.0.1:{port}, synchronous");
        Ok(servers)
    }

    /// Sets [`Servers::env`] on `step`.
    pub(crate) fn apply(&self, step: &mut Step) {
        for (name, value) in self.all_env() {
            step.env(name, value);
        }
    }

    /// [`Servers::env`], and with a standby: `SPOOL_TEST_POSTGRES_FAILOVER` (the URL of
    /// both, `target_session_attrs=read-write`) and `SPOOL_TEST_POSTGRES_FAILOVER_NOW`
    /// (the shell command that forces one failover, [`failover`]).
    fn all_env(&self) -> Vec<(&'static str, String)> {
        let mut env = self.env();
        if let Some(standby) = self.standby_port {
            env.push((
                "SPOOL_TEST_POSTGRES_FAILOVER",
                format!(
                    "postgres://postgres@127.0.0.1:{},127.0.0.1:{standby}/postgres\
                     ?target_session_attrs=read-write",
                    self.postgres_port
                ),
            ));
            // This program, by its path: when cargo rebuilt it while it runs (the
            // workspace's tests build it too), Linux names the running one `… (deleted)`
            // and the path holds the new build of the same code.
            let xtask = std::env::current_exe().unwrap_or_else(|_| "xtask".into());
            let xtask = xtask.to_string_lossy();
            env.push((
                "SPOOL_TEST_POSTGRES_FAILOVER_NOW",
                format!(
                    "{} postgres-failover {}",
                    xtask.trim_end_matches(" (deleted)"),
                    self.dir.display()
                ),
            ));
        }
        env
    }

    fn data(&self) -> PathBuf {
        self.dir.join(PRIMARY)
    }

    fn as_postgres(&self, program: &str) -> Step {
        as_postgres(&self.bin, program)
    }

    fn start_postgres(&mut self) -> Result<(), String> {
        chown_postgres(&self.dir)?;
        self.as_postgres("initdb")
            .args([
                "--no-sync",
                "--auth=trust",
                "--username=postgres",
                "--encoding=UTF8",
            ])
            .args(["--locale=C", "-D"])
            .arg(self.data())
            .output_or_err("initdb")?;
        // Loopback only: the superuser is trusted, every other role gives a password.
        let hba = "local all all trust\n\
                   host all postgres 127.0.0.1/32 trust\n\
                   host replication postgres 127.0.0.1/32 trust\n\
                   host all all 127.0.0.1/32 scram-sha-256\n";
        write(&self.data().join("pg_hba.conf"), hba)?;
        let port = free_port()?;
        let socket_dir = self.dir.display().to_string();
        // In the configuration file, not on pg_ctl's command line, so that a test
        // that stops and starts the server gets the same one back.
        let settings = format!(
            "listen_addresses = '127.0.0.1'\nport = {port}\n\
             unix_socket_directories = '{socket_dir}'\nmax_connections = 300\n\
             shared_buffers = 128MB\n"
        );
        let conf = self.data().join("postgresql.conf");
        let mut text =
            std::fs::read_to_string(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
        text.push_str(&settings);
        write(&conf, &text)?;
        self.as_postgres("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("postgres.log"))
            .arg("start")
            .output_or_err("pg_ctl start")?;
        self.postgres_port = port;
        write(&self.dir.join(format!("{PRIMARY}.port")), &port.to_string())?;
        let create_role = format!(
            "CREATE ROLE {} LOGIN PASSWORD '{}'",
            PASSWORD_ROLE.0, PASSWORD_ROLE.1
        );
        self.as_postgres("psql")
            .args(["-h", &socket_dir, "-p", &port.to_string(), "-U", "postgres"])
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-c", &create_role])
            .output_or_err("psql CREATE ROLE")?;
        Ok(())
    }

    fn start_pgbouncer(&mut self) -> Result<(), String> {
        let port = free_port()?;
        let dir = self.dir.display();
        let config = format!(
            "[databases]\n\
             * = host=127.0.0.1 port={postgres}\n\
             [pgbouncer]\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {port}\n\
             unix_socket_dir =\n\
             auth_type = trust\n\
             auth_file = {dir}/userlist.txt\n\
             pool_mode = transaction\n\
             max_client_conn = 1000\n\
             default_pool_size = 40\n\
             server_login_retry = 1\n\
             logfile = {dir}/pgbouncer.log\n\
             pidfile = {dir}/pgbouncer.pid\n",
            postgres = self.postgres_port,
        );
        write(&self.dir.join("pgbouncer.ini"), &config)?;
        write(
            &self.dir.join("userlist.txt"),
            &format!("\"postgres\" \"\"\n\"{}\" \"\"\n", PASSWORD_ROLE.0),
        )?;
        chown_postgres(&self.dir)?;
        let mut step = Step::new("runuser");
        step.args(["-u", "postgres", "--", "/usr/sbin/pgbouncer", "-d"])
            .arg(self.dir.join("pgbouncer.ini"));
        step.output_or_err("pgbouncer")?;
        self.pgbouncer_port = port;
        // It is up once it accepts connections.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Err(format!(
            "pgbouncer did not listen on 127.0.0.1:{port} within 5 s"
        ))
    }
}

impl Servers {
    /// A shell script that stops whatever runs from the servers' directory (the pooler,
    /// both servers of a pair, with `immediate`: nothing of them is kept) and removes it.
    fn stop_script(&self) -> String {
        let dir = self.dir.display();
        let pg_ctl = self.bin.join("pg_ctl");
        format!(
            "[ -f {dir}/pgbouncer.pid ] && kill $(cat {dir}/pgbouncer.pid); \
             for data in {dir}/{PRIMARY} {dir}/{STANDBY}; do \
             [ -f $data/postmaster.pid ] && runuser -u postgres -- {pg_ctl} -w -t 60 \
             -m immediate -D $data stop >/dev/null 2>&1; done; rm -rf {dir}",
            pg_ctl = pg_ctl.display()
        )
    }

    /// Starts a watchdog in a session of its own (so a signal to this process's group
    /// does not reach it): once this process is gone, however it ended, it runs
    /// [`Servers::stop_script`]. After a normal drop there is nothing left to stop.
    fn watch(&self) -> Result<(), String> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop}",
            pid = std::process::id(),
            stop = self.stop_script()
        );
        std::process::Command::new("setsid")
            .args(["sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map(|_| ())
            .map_err(|e| format!("setsid: {e}: no watchdog for the servers"))
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = Step::new("sh").args(["-c", &self.stop_script()]).output();
    }
}

/// The data directories of a pair under the servers' directory: the first server's,
/// and its standby's. A failover swaps their roles; each keeps its port (in
/// `NAME.port`).
const PRIMARY: &str = "data";
const STANDBY: &str = "standby";

/// The two servers of [`Servers::start_with_standby`], for the steps that change their
/// roles, in whichever process runs them.
struct Pair {
    dir: PathBuf,
    bin: PathBuf,
}

impl Pair {
    fn port(&self, node: &str) -> Result<u16, String> {
        let path = self.dir.join(format!("{node}.port"));
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        text.trim()
            .parse()
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn psql(&self, port: u16, sql: &str) -> Result<String, String> {
        let socket_dir = self.dir.display().to_string();
        as_postgres(&self.bin, "psql")
            .args(["-h", &socket_dir, "-p", &port.to_string(), "-U", "postgres"])
            .args(["-v", "ON_ERROR_STOP=1", "-q", "-A", "-t", "-c", sql])
            .output_or_err("psql")
            .map(|out| out.trim().to_owned())
    }

    /// `node` made a hot standby of the server on `primary`: `pg_basebackup -R` into
    /// an empty directory, on `port`, then started.
    fn make_standby(&self, node: &str, primary: u16, port: u16) -> Result<(), String> {
        let data = self.dir.join(node);
        as_postgres(&self.bin, "pg_basebackup")
            .args(["-h", "127.0.0.1", "-p", &primary.to_string()])
            // A fast checkpoint: a spread one waits for most of `checkpoint_timeout`.
            .args([
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "--checkpoint=fast",
                "-D",
            ])
            .arg(&data)
            .output_or_err("pg_basebackup")?;
        let conf = data.join("postgresql.conf");
        let mut text =
            std::fs::read_to_string(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
        // The last setting of a name wins: the copied port is the primary's.
        text.push_str(&format!("port = {port}\nhot_standby = on\n"));
        write(&conf, &text)?;
        // Copied from a primary that waits for its standby: this server must not wait
        // for one when it is promoted, until one is there (`require_synchronous_standby`).
        let auto = data.join("postgresql.auto.conf");
        let text =
            std::fs::read_to_string(&auto).map_err(|e| format!("{}: {e}", auto.display()))?;
        let kept: String = text
            .lines()
            .filter(|line| !line.starts_with("synchronous_standby_names"))
            .map(|line| format!("{line}\n"))
            .collect();
        write(&auto, &kept)?;
        write(&self.dir.join(format!("{node}.port")), &port.to_string())?;
        as_postgres(&self.bin, "pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(self.dir.join(format!("{node}.log")))
            .arg("start")
            .output_or_err("pg_ctl start (standby)")
            .map(|_| ())
    }

    /// Makes the server on `primary` wait for its standby at every commit
    /// (`synchronous_standby_names = '*'`), and returns once the standby is
    /// synchronous and has flushed everything the server wrote before: from then on
    /// every acknowledged commit is on both.
    fn require_synchronous_standby(&self, primary: u16) -> Result<(), String> {
        self.psql(primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")?;
        self.psql(primary, "SELECT pg_reload_conf()")?;
        let written = self.psql(primary, "SELECT pg_current_wal_lsn()")?;
        let caught_up = format!(
            "SELECT count(*) FROM pg_stat_replication \
             WHERE sync_state = 'sync' AND flush_lsn >= '{written}'::pg_lsn"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.psql(primary, &caught_up)? != "1" {
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "the standby of 127.0.0.1:{primary} was not synchronous at {written} \
                     within 60 s"
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }
}

/// One forced failover of the pair under `dir` (`cargo xtask postgres-failover DIR`):
/// the primary and every process of it killed at once with `kill -9` (a machine
/// lost), the standby promoted (`pg_ctl promote`), and the lost server's directory
/// rebuilt as the new primary's synchronous standby on its old port. Returns when that
/// standby is synchronous, so a next failover loses no acknowledged commit either.
pub(crate) fn failover(dir: &Path) -> Result<(), String> {
    let pair = Pair {
        dir: dir.to_owned(),
        bin: postgres_bin().ok_or("PostgreSQL is not installed")?,
    };
    let (lost, promoted) = if dir.join(PRIMARY).join("standby.signal").exists() {
        (STANDBY, PRIMARY)
    } else {
        (PRIMARY, STANDBY)
    };
    let started = std::time::Instant::now();
    let pid_file = dir.join(lost).join("postmaster.pid");
    let pid =
        std::fs::read_to_string(&pid_file).map_err(|e| format!("{}: {e}", pid_file.display()))?;
    let pid = pid.lines().next().unwrap_or_default().trim().to_owned();
    let children = Step::new("pgrep")
        .args(["-P", &pid])
        .output()
        .unwrap_or_default();
    let mut kill = Step::new("kill");
    kill.args(["-9", &pid]).args(children.split_whitespace());
    kill.output_or_err("kill -9 the primary")?;
    as_postgres(&pair.bin, "pg_ctl")
        .args(["-w", "-t", "60", "-D"])
        .arg(dir.join(promoted))
        .arg("promote")
        .output_or_err("pg_ctl promote")?;
    let promoted_at = started.elapsed();
    // The lost machine is replaced by a new one: its directory and the socket files
    // its killed server left in the shared socket directory are gone.
    let lost_dir = dir.join(lost);
    std::fs::remove_dir_all(&lost_dir).map_err(|e| format!("{}: {e}", lost_dir.display()))?;
    let lost_port = pair.port(lost)?;
    for socket in [
        format!(".s.PGSQL.{lost_port}"),
        format!(".s.PGSQL.{lost_port}.lock"),
    ] {
        let _ = std::fs::remove_file(dir.join(socket));
    }
    let new_primary = pair.port(promoted)?;
    pair.make_standby(lost, new_primary, lost_port)?;
    pair.require_synchronous_standby(new_primary)?;
    eprintln!(
        "postgres: failover to 127.0.0.1:{new_primary}: promoted after {:.2} s, a \
         synchronous standby again after {:.2} s",
        promoted_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn as_postgres(bin: &Path, program: &str) -> Step {
    let mut step = Step::new("runuser");
    step.args(["-u", "postgres", "--"]).arg(bin.join(program));
    step
}

/// The newest installed PostgreSQL's program directory.
fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A port nobody listens on now (the OS's choice).
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn chown_postgres(dir: &Path) -> Result<(), String> {
    Step::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(dir)
        .output_or_err("chown")
        .map(|_| ())
}

/// Runs `command` with the servers' variables set, then stops them; `standby`: with a
/// synchronous hot standby too ([`Servers::start_with_standby`]).
pub(crate) fn with_servers(command: &[String], standby: bool) -> Result<(), String> {
    let Some((program, args)) = command.split_first() else {
        return Err("usage: cargo xtask with-postgres [--standby] <command> [args…]".into());
    };
    let servers = if standby {
        Servers::start_with_standby()?
    } else {
        Servers::start()?
    };
    let mut step = Step::new(program);
    step.args(args);
    servers.apply(&mut step);
    step.run(program)
}
