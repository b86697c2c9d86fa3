//! A private MariaDB for the WordPress workloads, started and stopped by the harness (as
//! `server/tests/databases.rs` does for the tests): its own data directory in the run's
//! scratch directory, `--no-defaults` so nothing of /etc/mysql applies, only a unix
//! socket, and a user `app`/`app-pass`. Every system under test talks to this one server,
//! which holds the same data for all of them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct MariaDb {
    pub(crate) socket: PathBuf,
    child: Child,
    log: PathBuf,
}

impl MariaDb {
    pub(crate) fn start(dir: &Path) -> Result<MariaDb, String> {
        let datadir = dir.join("data");
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let install = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", datadir.display()))
            .args(["--auth-root-authentication-method=socket", "--skip-test-db"])
            .args(["--user=root", "--skip-name-resolve"])
            .output()
            .map_err(|e| format!("mariadb-install-db: {e} (apt-get install -y mariadb-server)"))?;
        if !install.status.success() {
            return Err(format!(
                "mariadb-install-db failed: {}",
                String::from_utf8_lossy(&install.stderr)
            ));
        }
        let socket = dir.join("mariadb.sock");
        let log = dir.join("mariadb.log");
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = super::super::systems::spawn_child(
            Command::new("mariadbd")
                .arg("--no-defaults")
                .arg(format!("--datadir={}", datadir.display()))
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--pid-file={}", dir.join("mariadb.pid").display()))
                // Only the unix socket: nothing listens on the network.
                .args(["--skip-networking", "--user=root", "--skip-name-resolve"])
                // The data fits in memory many times over; commits need not reach the disk
                // for a benchmark whose writes happen once, at set-up.
                .args([
                    "--innodb-buffer-pool-size=128M",
                    "--innodb-flush-log-at-trx-commit=0",
                    "--max-connections=500",
                ])
                .args(["--skip-log-bin", "--performance-schema=OFF"])
                .stdout(Stdio::null())
                .stderr(log_file),
        )
        .map_err(|e| format!("mariadbd: {e} (apt-get install -y mariadb-server)"))?;
        let mut db = MariaDb { socket, child, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(db.socket.exists() && db.sql("SELECT 1").is_ok()) {
            if let Ok(Some(status)) = db.child.try_wait() {
                return Err(format!("mariadbd exited ({status}):\n{}", db.log_text()));
            }
            if Instant::now() > deadline {
                return Err(format!("mariadbd not ready in 60 s:\n{}", db.log_text()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        db.sql(
            "CREATE USER 'app'@'localhost' IDENTIFIED BY 'app-pass'; \
             GRANT ALL ON *.* TO 'app'@'localhost';",
        )?;
        Ok(db)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs SQL as root through the `mariadb` client; tab-separated rows.
    pub(crate) fn sql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-u", "root", "-N", "-B", "-e", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("mariadb client: {e} (apt-get install -y mariadb-client)"))?;
        if !out.status.success() {
            return Err(format!(
                "mariadb: {sql}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn version(&self) -> String {
        self.sql("SELECT VERSION()")
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        // mariadbd shuts down cleanly on SIGTERM.
        // SAFETY: kill(2) on the pid of our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
