//! Private database servers for the tests that serve real apps: MariaDB (`mariadbd` from
//! Debian's `mariadb-server`) and PostgreSQL (`postgres` from Debian's `postgresql`), each
//! started as a child process in a directory the caller owns and reachable only through a
//! unix socket in it (no TCP listener: `--skip-networking`, `listen_addresses=''`), and
//! stopped by pid (SIGTERM for mariadbd, SIGINT for postgres, SIGKILL after 20 s) when its
//! handle drops, so nothing is left running or listening afterwards. Each starts empty
//! (MariaDB's root over the socket, PostgreSQL's `postgres` with `trust`): the caller
//! creates its databases and users. [`databases`] is the pair most tests share: one of
//! each, with database `app` ready, started on first use and stopped when the last test
//! of the binary that uses it drops its handle (`databases.rs`, `deadlines.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a database server may take to accept connections.
const DB_STARTUP: Duration = Duration::from_secs(60);

/// Runs a command to completion; panics with its output if it fails.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A database server started by a test; stopped by pid on drop (SIGTERM, then SIGKILL
/// after 20 s), and waited for, so it never outlives the test process.
pub struct DbProcess {
    child: Child,
    name: &'static str,
    log: PathBuf,
    /// The signal that makes this server close its connections and exit.
    stop_signal: &'static str,
}

impl DbProcess {
    pub fn spawn(
        name: &'static str,
        stop_signal: &'static str,
        mut cmd: Command,
        log: PathBuf,
    ) -> DbProcess {
        let file = std::fs::File::create(&log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("{name} starts: {e}"));
        DbProcess {
            child,
            name,
            log,
            stop_signal,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls `ready` until it holds; panics with the server's log if it exits or times out.
    pub fn wait_ready(&mut self, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + DB_STARTUP;
        while !ready() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("{} exited ({status}):\n{}", self.name, self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{} not ready:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DbProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // mariadbd shuts down on SIGTERM; postgres's SIGTERM is a "smart" shutdown that
        // waits for clients, its SIGINT the "fast" one that disconnects them. A SIGKILL of
        // the postmaster would leave its backends running, hence the clean signal first.
        let _ = Command::new("kill")
            .arg(format!("-{}", self.stop_signal))
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// uid/gid of a system user, from /etc/passwd.
pub fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        if f.len() > 3 && f[0] == name {
            Some((f[2].parse().ok()?, f[3].parse().ok()?))
        } else {
            None
        }
    })
}

pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self is owned by the effective uid: no libc call needed.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// The newest `/usr/lib/postgresql/N/bin`.
pub fn postgres_bin() -> PathBuf {
    let mut versions: Vec<u32> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("Debian's postgresql package is missing: scripts/install-test-deps.sh installs it")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    versions.sort();
    let v = versions.last().expect("a PostgreSQL version is installed");
    PathBuf::from(format!("/usr/lib/postgresql/{v}/bin"))
}

/// A private MariaDB on a unix socket (`DIR/mariadb.sock`), data in `DIR/mariadb`; root
/// logs in over the socket (unix_socket authentication) and creates what the test needs.
pub struct MariaDb {
    pub socket: PathBuf,
    _process: DbProcess,
}

/// The redo log's size, the same for `mariadb-install-db` and `mariadbd`.
const INNODB_LOG_FILE_SIZE: &str = "--innodb-log-file-size=16M";

impl MariaDb {
    pub fn start(dir: &Path) -> MariaDb {
        let datadir = dir.join("mariadb");
        // --no-defaults everywhere: nothing from /etc/mysql applies to this instance.
        // A 16 MiB redo log instead of the default 96 MiB, preallocated by install-db and
        // by the server alike: several instances run at once, on machines short of disk.
        run(
            Command::new("mariadb-install-db")
                .arg("--no-defaults")
                .arg(format!("--datadir={}", datadir.display()))
                .arg(INNODB_LOG_FILE_SIZE)
                .args(["--auth-root-authentication-method=socket", "--skip-test-db"])
                .args(["--user=root", "--skip-name-resolve"]),
            "mariadb-install-db",
        );
        let socket = dir.join("mariadb.sock");
        let mut cmd = Command::new("mariadbd");
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", datadir.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
            // Only the unix socket: nothing listens on the network.
            .args(["--skip-networking", "--user=root", "--skip-name-resolve"])
            // Small and quick: the machine is shared.
            .args([
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=0",
                INNODB_LOG_FILE_SIZE,
            ])
            .args(["--skip-log-bin", "--performance-schema=OFF"]);
        let mut process = DbProcess::spawn("mariadbd", "TERM", cmd, dir.join("mariadb.log"));
        let db = |sql: &str| {
            Command::new("mariadb")
                .arg("--no-defaults")
                .arg(format!("--socket={}", socket.display()))
                .args(["-u", "root", "-N", "-B", "-e", sql])
                .stdin(Stdio::null())
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        process.wait_ready(|| socket.exists() && db("SELECT 1"));
        MariaDb {
            socket,
            _process: process,
        }
    }

    /// Runs SQL as root through the `mariadb` client; tab-separated rows.
    pub fn sql(&self, sql: &str) -> String {
        run(
            Command::new("mariadb")
                .arg("--no-defaults")
                .arg(format!("--socket={}", self.socket.display()))
                .args(["-u", "root", "-N", "-B", "-e", sql]),
            "mariadb client",
        )
    }
}

/// A private PostgreSQL on a unix socket in its own directory (`listen_addresses=''`),
/// `trust` authentication, no database but `postgres`. Postgres refuses to run as root: when the test
/// runs as root, initdb and postgres run as Debian's `postgres` system user (uid/gid set
/// on the child by `Command`, no su/runuser process in between, so the pid we hold is the
/// postmaster's own).
pub struct Postgres {
    pub sockdir: PathBuf,
    pub port: u16,
    _process: DbProcess,
}

impl Postgres {
    pub fn start(dir: &Path) -> Postgres {
        use std::os::unix::process::CommandExt;
        let bin = postgres_bin();
        let owner = if running_as_root() {
            Some(system_user("postgres").expect("the postgres system user exists"))
        } else {
            None
        };
        // The postgres user must reach its directory inside the caller's.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let pgdir = dir.join("postgres");
        std::fs::create_dir(&pgdir).unwrap();
        let as_owner = |cmd: &mut Command| {
            if let Some((uid, gid)) = owner {
                cmd.uid(uid).gid(gid);
            }
        };
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&pgdir, Some(uid), Some(gid)).unwrap();
        }
        let data = pgdir.join("data");
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
            .env("LC_ALL", "C");
        as_owner(&mut initdb);
        run(&mut initdb, "initdb");
        // The socket directory is private too; the port only names the socket file.
        let port = 5432;
        let mut cmd = Command::new(bin.join("postgres"));
        cmd.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&pgdir)
            .args(["-p", &port.to_string(), "-h", "", "-F"])
            .args(["-c", "shared_buffers=16MB", "-c", "max_connections=50"]);
        as_owner(&mut cmd);
        let mut process = DbProcess::spawn("postgres", "INT", cmd, dir.join("postgres.log"));
        let isready = bin.join("pg_isready");
        process.wait_ready(|| {
            Command::new(&isready)
                .arg("-h")
                .arg(&pgdir)
                .args(["-p", &port.to_string(), "-q"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        });
        Postgres {
            sockdir: pgdir,
            port,
            _process: process,
        }
    }

    /// Runs SQL through `psql`; unaligned rows.
    pub fn sql(&self, db: &str, sql: &str) -> String {
        run(
            Command::new(postgres_bin().join("psql"))
                .arg("-h")
                .arg(&self.sockdir)
                .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", db])
                .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql]),
            "psql",
        )
    }
}

/// Both servers in one temporary directory. Field order matters: the servers are
/// stopped before the directory goes.
pub struct Databases {
    pub mariadb: MariaDb,
    pub postgres: Postgres,
    _dir: tempfile::TempDir,
}

impl Databases {
    /// Environment for ferrophp so PHP scripts find the servers.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DB_MY_SOCKET", self.mariadb.socket.display().to_string()),
            ("DB_PG_SOCKDIR", self.postgres.sockdir.display().to_string()),
            ("DB_PG_PORT", self.postgres.port.to_string()),
        ]
    }
}

static SHARED: Mutex<Weak<Databases>> = Mutex::new(Weak::new());

/// The servers, started on first use and shared by the tests that run concurrently:
/// database `app` on both (with a table `marks`), user `app`/`app-pass` allowed everything
/// on MariaDB.
pub fn databases() -> Arc<Databases> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dbs) = shared.upgrade() {
        return dbs;
    }
    let dir = tempfile::tempdir().unwrap();
    // The postgres user must reach its directory inside ours.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let (mariadb, postgres) = std::thread::scope(|s| {
        let my = s.spawn(|| MariaDb::start(dir.path()));
        let pg = Postgres::start(dir.path());
        (my.join().unwrap(), pg)
    });
    mariadb.sql(
        "CREATE DATABASE app; \
         CREATE USER 'app'@'localhost' IDENTIFIED BY 'app-pass'; \
         GRANT ALL ON *.* TO 'app'@'localhost'; \
         CREATE TABLE app.marks (id INT AUTO_INCREMENT PRIMARY KEY, tag VARCHAR(200)) \
         ENGINE=InnoDB;",
    );
    postgres.sql("postgres", "CREATE DATABASE app");
    postgres.sql(
        "app",
        "CREATE TABLE marks (id SERIAL PRIMARY KEY, tag TEXT NOT NULL)",
    );
    eprintln!("databases started in {:?}", started.elapsed());
    let dbs = Arc::new(Databases {
        mariadb,
        postgres,
        _dir: dir,
    });
    *shared = Arc::downgrade(&dbs);
    dbs
}
