//! One-file apps (issue 39): what a package costs against the same app served from its
//! directory by the same release, in one run.
//!
//! `cargo run --release -p ferrophp-benches --bin package -- [--starts N] [--seconds S]`
//! (after `scripts/release.sh`: it unpacks `dist/ferrophp-*.tar.gz`). The app is the
//! Symfony catalogue as `server/tests/package.rs` packs it (`test-data/compare-apps/symfony`
//! with Debian's Symfony, Twig and PSR copied into `vendor/`, `test-data/package/symfony`
//! over it: the catalogue in worker mode, product pages classic).
//!
//! - **Packing**: `ferrophp package` wall and CPU time, the package's size.
//! - **Start-up**: from spawning the server to the first 200 on `/catalogue/1` (a worker
//!   boot), wall and the server's CPU at that moment (`/proc/PID/stat`: the launcher, the
//!   loader and ferrophp are one process). First start: the package's cache and data
//!   directories empty (it extracts), the directory's `var/` empty (both compile
//!   Symfony's container). Later starts: everything in place; directory and package
//!   alternate, N each, median and min.
//! - **The launcher alone**: `PACKAGE --package-info` (open, BLAKE3 of the whole file,
//!   index, directories; no PHP): what a later start adds before ferrophp runs.
//! - **Throughput**: wrk (1 thread, 16 connections, S seconds) on `/catalogue/1` (worker)
//!   and `/product/SKU-0007` (classic), directory and package alternating, twice.
//! - **Files from a stream wrapper instead of disk** (the alternative to extracting): a
//!   phar of the same app's code as the proxy (phar:// is PHP's own in-process archive
//!   wrapper, OPcache caches its scripts): a classic script that loads Symfony and Twig
//!   and renders a template, its code from the extracted directory vs from the phar, wrk
//!   as above.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the benchmark; prints the tables on stdout.
pub fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("package bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

struct Options {
    starts: usize,
    seconds: u64,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        starts: 7,
        seconds: 10,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args
            .get(i + 1)
            .ok_or(format!("{} needs a value", args[i]))?;
        match args[i].as_str() {
            "--starts" => o.starts = value.parse().map_err(|_| "--starts N")?,
            "--seconds" => o.seconds = value.parse().map_err(|_| "--seconds S")?,
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    Ok(o)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sh(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    sh(Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to))
    .map(drop)
}

/// CPU seconds of the process so far (all its threads).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // After the command name's closing parenthesis: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap_or(0) + 2..]
        .split(' ')
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().unwrap_or(0.0) + fields[12].parse::<f64>().unwrap_or(0.0);
    // SAFETY: sysconf only reads a system constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// CPU seconds of this process's waited-for children.
fn children_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut u = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The status of `GET path`, or None if nothing answered.
fn status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// How a server is started: the directory or the package.
struct System {
    label: &'static str,
    command: Box<dyn Fn(u16) -> Command>,
}

struct Running {
    child: Child,
    addr: SocketAddr,
}

impl Running {
    fn stop(mut self) {
        // SAFETY: kill sends SIGTERM to our own child by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// Starts `system` and waits for the first 200 on `path`: the server, wall seconds and
/// the server's CPU seconds at that moment.
fn start(system: &System, path: &str) -> Result<(Running, f64, f64), String> {
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let started = Instant::now();
    let mut child = (system.command)(port)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", system.label))?;
    loop {
        if let Some(s) = status(addr, path) {
            if s == 200 {
                let wall = started.elapsed().as_secs_f64();
                let cpu = cpu_seconds(child.id());
                return Ok((Running { child, addr }, wall, cpu));
            }
            return Err(format!("{}: {path} answered {s}", system.label));
        }
        if let Ok(Some(exit)) = child.try_wait() {
            return Err(format!("{}: exited {exit} before serving", system.label));
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            return Err(format!("{}: no 200 within 120 s", system.label));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn wrk(addr: SocketAddr, path: &str, seconds: u64) -> Result<f64, String> {
    let out = sh(Command::new("wrk")
        .args(["-t1", "-c16", &format!("-d{seconds}s")])
        .arg(format!("http://{addr}{path}")))?;
    if out.contains("Non-2xx") || out.contains("Socket errors") {
        return Err(format!("wrk saw errors on {path}:\n{out}"));
    }
    out.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no Requests/sec in wrk's output:\n{out}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn run() -> Result<(), String> {
    let o = options()?;
    let version = env!("CARGO_PKG_VERSION");
    let tarball = repo().join(format!("dist/ferrophp-{version}-linux-x86_64.tar.gz"));
    if !tarball.is_file() {
        return Err(format!(
            "{} is missing: run scripts/release.sh",
            tarball.display()
        ));
    }
    let work = std::env::temp_dir().join(format!("ferrophp-package-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let result = measure(&o, &tarball, &work);
    // The extracted trees are read-only.
    let _ = sh(Command::new("chmod").arg("-R").arg("u+w").arg(&work));
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn measure(o: &Options, tarball: &Path, work: &Path) -> Result<(), String> {
    sh(Command::new("tar")
        .arg("-xzf")
        .arg(tarball)
        .arg("-C")
        .arg(work))?;
    let tree = work.join(format!(
        "ferrophp-{}-linux-x86_64",
        env!("CARGO_PKG_VERSION")
    ));
    let ferrophp = tree.join("ferrophp");

    // The app, as server/tests/package.rs makes it.
    let app = work.join("symfony-app");
    copy_tree(&repo().join("test-data/compare-apps/symfony"), &app)?;
    for package in ["Symfony", "Psr", "Twig"] {
        copy_tree(
            &Path::new("/usr/share/php").join(package),
            &app.join("vendor").join(package),
        )?;
    }
    copy_tree(&repo().join("test-data/package/symfony"), &app)?;

    let pkg = work.join("catalogue");
    let cpu_before = children_cpu();
    let packing = Instant::now();
    let report = sh(Command::new(&ferrophp)
        .arg("package")
        .arg("--app")
        .arg(&app)
        .arg("-o")
        .arg(&pkg))?;
    let pack_wall = packing.elapsed().as_secs_f64();
    let pack_cpu = children_cpu() - cpu_before;
    let size = std::fs::metadata(&pkg).map_err(|e| e.to_string())?.len();
    eprintln!("{}", report.trim());

    let (data, cache) = (work.join("data"), work.join("cache"));
    let directory = System {
        label: "directory",
        command: {
            let (ferrophp, app) = (ferrophp.clone(), app.clone());
            Box::new(move |port| {
                let mut c = Command::new(&ferrophp);
                c.args(["serve", "--config", "ferrophp.toml", "--listen"])
                    .arg(format!("127.0.0.1:{port}"))
                    .current_dir(&app);
                c
            })
        },
    };
    let packed = System {
        label: "package",
        command: {
            let (pkg, data, cache) = (pkg.clone(), data.clone(), cache.clone());
            Box::new(move |port| {
                let mut c = Command::new(&pkg);
                c.args(["serve", "--listen"])
                    .arg(format!("127.0.0.1:{port}"))
                    .env("FERROPHP_DATA_DIR", &data)
                    .env("FERROPHP_PACKAGE_CACHE", &cache);
                c
            })
        },
    };
    let systems = [&directory, &packed];
    let page = "/catalogue/1";

    // First starts: nothing extracted, no Symfony cache.
    let _ = std::fs::remove_dir_all(app.join("var"));
    let (s, dir_first, dir_first_cpu) = start(&directory, page)?;
    s.stop();
    let (s, pkg_first, pkg_first_cpu) = start(&packed, page)?;
    s.stop();

    // Later starts, alternating.
    let mut later: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..o.starts {
        for (i, system) in systems.iter().enumerate() {
            let (s, wall, cpu) = start(system, page)?;
            s.stop();
            later[i].push((wall, cpu));
        }
    }

    // The launcher alone.
    let mut info = Vec::new();
    for _ in 0..o.starts {
        let t = Instant::now();
        sh(Command::new(&pkg)
            .arg("--package-info")
            .env("FERROPHP_DATA_DIR", &data)
            .env("FERROPHP_PACKAGE_CACHE", &cache))?;
        info.push(t.elapsed().as_secs_f64());
    }

    // Throughput, alternating, twice.
    let paths = ["/catalogue/1", "/product/SKU-0007"];
    let mut rps = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
    for _round in 0..2 {
        for (i, system) in systems.iter().enumerate() {
            let (s, _, _) = start(system, page)?;
            for (p, path) in paths.iter().enumerate() {
                for _ in 0..200 {
                    status(s.addr, path);
                }
                rps[p][i].push(wrk(s.addr, path, o.seconds)?);
            }
            s.stop();
        }
    }

    // Stream wrapper proxy: the same code from the extracted tree vs from a phar.
    let proxy = phar_proxy(o, work, &ferrophp, &cache)?;

    println!(
        "## One-file app: the Symfony catalogue, package vs directory (same release, one run)\n"
    );
    println!(
        "Packing: {pack_wall:.1} s wall, {pack_cpu:.1} s CPU (`ferrophp package`, zstd level 6); \
         package {:.1} MB.\n",
        size as f64 / 1e6
    );
    println!(
        "| start-up, to the first 200 on {page} | directory | package | package - directory |"
    );
    println!("|---|---:|---:|---:|");
    println!(
        "| first start (package: extracts; both: compile Symfony's container), wall | {:.0} ms | {:.0} ms | {:+.0} ms |",
        dir_first * 1e3,
        pkg_first * 1e3,
        (pkg_first - dir_first) * 1e3
    );
    println!(
        "| first start, server CPU | {:.0} ms | {:.0} ms | {:+.0} ms |",
        dir_first_cpu * 1e3,
        pkg_first_cpu * 1e3,
        (pkg_first_cpu - dir_first_cpu) * 1e3
    );
    let walls = |i: usize| later[i].iter().map(|x| x.0).collect::<Vec<_>>();
    let cpus = |i: usize| later[i].iter().map(|x| x.1).collect::<Vec<_>>();
    println!(
        "| later starts ({} each), wall median (min) | {:.0} ({:.0}) ms | {:.0} ({:.0}) ms | {:+.0} ms |",
        o.starts,
        median(walls(0)) * 1e3,
        min(&walls(0)) * 1e3,
        median(walls(1)) * 1e3,
        min(&walls(1)) * 1e3,
        (median(walls(1)) - median(walls(0))) * 1e3
    );
    println!(
        "| later starts, server CPU median | {:.0} ms | {:.0} ms | {:+.0} ms |",
        median(cpus(0)) * 1e3,
        median(cpus(1)) * 1e3,
        (median(cpus(1)) - median(cpus(0))) * 1e3
    );
    println!(
        "| the launcher alone (`--package-info`: BLAKE3 of {:.1} MB, index), wall median (min) | | {:.0} ({:.0}) ms | |",
        size as f64 / 1e6,
        median(info.clone()) * 1e3,
        min(&info) * 1e3
    );
    println!();
    println!(
        "| wrk -t1 -c16 -d{}s, req/s (2 runs each) | directory | package | package / directory |",
        o.seconds
    );
    println!("|---|---:|---:|---:|");
    for (p, path) in paths.iter().enumerate() {
        let (d, k) = (&rps[p][0], &rps[p][1]);
        let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "| {path} ({}) | {} | {} | {:.3} |",
            if p == 0 { "worker" } else { "classic" },
            d.iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            k.iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            mean(k) / mean(d)
        );
    }
    println!();
    println!("| stream-wrapper proxy: Symfony + Twig loaded per classic request, wrk req/s | extracted files | phar:// | phar / files |");
    println!("|---|---:|---:|---:|");
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let join = |v: &Vec<f64>| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for ((files, phar), label) in proxy.iter().zip([
        "OPcache on, the archive opened per request",
        "OPcache on, its manifest kept (phar.cache_list)",
    ]) {
        println!(
            "| {label} | {} | {} | {:.3} |",
            join(files),
            join(phar),
            mean(phar) / mean(files)
        );
    }
    Ok(())
}

/// One proxy server's wrk req/s: the script's code from files, from the phar.
type ProxyRun = (Vec<f64>, Vec<f64>);

/// The script both sides run: Symfony's HttpFoundation and Twig, a template rendered.
const PROXY_SCRIPT: &str = r#"<?php
require BASE . '/autoload.php';
$request = Symfony\Component\HttpFoundation\Request::create('/catalogue/3?q=x');
$twig = new Twig\Environment(new Twig\Loader\ArrayLoader(['t' => '{% for i in items %}{{ i|upper }} {% endfor %}{{ path }}']));
$response = new Symfony\Component\HttpFoundation\Response($twig->render('t', ['items' => ['a', 'b'], 'path' => $request->getPathInfo()]));
$response->send();
"#;

/// wrk req/s of the proxy script reading its code from the extracted tree and from a
/// phar of the same files (two runs each, alternating), without and with
/// `phar.cache_list`.
fn phar_proxy(
    o: &Options,
    work: &Path,
    ferrophp: &Path,
    cache: &Path,
) -> Result<Vec<ProxyRun>, String> {
    let extracted = std::fs::read_dir(cache)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .ok_or("no extracted tree")?
        .join("app");
    let phar = work.join("app.phar");
    let build = format!(
        "$p = new Phar('{}'); $p->buildFromDirectory('{}', '#/(vendor|src)/|autoload\\.php$#'); echo $p->count();",
        phar.display(),
        extracted.display()
    );
    sh(Command::new(ferrophp).args(["php-cli", "-d", "phar.readonly=0", "-r", &build]))?;
    let root = work.join("proxy");
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    for (name, base) in [
        ("files.php", format!("'{}'", extracted.display())),
        ("phar.php", format!("'phar://{}'", phar.display())),
    ] {
        std::fs::write(
            root.join(name),
            PROXY_SCRIPT.replacen("<?php\n", &format!("<?php\nconst BASE = {base};\n"), 1),
        )
        .map_err(|e| e.to_string())?;
    }
    // Plain, and with the archive's manifest parsed once at start-up (phar.cache_list),
    // closer to a wrapper that keeps its index in memory.
    let mut results = Vec::new();
    for cache_list in [None, Some(&phar)] {
        let define = cache_list.map(|p| format!("phar.cache_list={}", p.display()));
        let system = System {
            label: "proxy",
            command: {
                let (ferrophp, root) = (ferrophp.to_path_buf(), root.clone());
                Box::new(move |port| {
                    let mut c = Command::new(&ferrophp);
                    c.args(["serve", "--threads", "2", "--root"])
                        .arg(&root)
                        .arg("--listen")
                        .arg(format!("127.0.0.1:{port}"));
                    if let Some(d) = &define {
                        c.arg("-d").arg(d);
                    }
                    c
                })
            },
        };
        let (s, _, _) = start(&system, "/files.php")?;
        for path in ["/files.php", "/phar.php"] {
            if status(s.addr, path) != Some(200) {
                return Err(format!("{path} does not answer 200"));
            }
        }
        let (mut files, mut phar_rps) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            for _ in 0..200 {
                status(s.addr, "/files.php");
                status(s.addr, "/phar.php");
            }
            files.push(wrk(s.addr, "/files.php", o.seconds)?);
            phar_rps.push(wrk(s.addr, "/phar.php", o.seconds)?);
        }
        s.stop();
        results.push((files, phar_rps));
    }
    Ok(results)
}
