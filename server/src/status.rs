//! `GET /status` on the admin listener: php-fpm's status page, for operators and tools
//! that come from php-fpm. The same fields under the same names (text, or JSON with
//! `?json`), per-thread detail with `?full`, one pool with `?pool=NAME` (`classic` or a
//! worker script's path). Without `pool`, the first section sums all pools (named after
//! the pool when there is only one, else `all`) and each pool follows.
//!
//! php-fpm's processes are ferrophp's PHP threads: `pid` is the thread's OS id. Fields
//! ferrophp does not keep per request (content length, user, script, last request CPU)
//! are left out rather than shown with made-up values.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use worker::observe::{PoolInfo, ThreadInfo, ThreadState};

/// What the status page knows beyond the pools' own counters.
pub(crate) struct StatusSetup {
    /// When the server started.
    pub started: SystemTime,
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// php-fpm's text date, `03/Dec/2026:12:00:00 +0000`.
fn fpm_date(t: SystemTime) -> String {
    // "Thu, 03 Dec 2026 12:00:00 GMT"
    let http = httpdate::fmt_http_date(t);
    let p: Vec<&str> = http.split_whitespace().collect();
    match p.as_slice() {
        [_, d, mon, y, time, _] => format!("{d}/{mon}/{y}:{time} +0000"),
        _ => http,
    }
}

/// One section's fields in php-fpm's order, over `pools` (one pool, or all of them).
fn pool_fields(name: &str, pools: &[&PoolInfo], started: SystemTime) -> Vec<(&'static str, Value)> {
    let sum = |f: &dyn Fn(&PoolInfo) -> u64| pools.iter().map(|p| f(p)).sum::<u64>();
    // php-fpm's `static` (a fixed number of processes) or `dynamic` (autoscaling).
    let manager = if pools
        .iter()
        .any(|p| p.size.max_threads > p.size.min_threads)
    {
        "dynamic"
    } else {
        "static"
    };
    let now = SystemTime::now();
    vec![
        ("pool", json!(name)),
        ("process manager", json!(manager)),
        ("start time", json!(unix_secs(started))),
        (
            "start since",
            json!(unix_secs(now).saturating_sub(unix_secs(started))),
        ),
        ("accepted conn", json!(sum(&|p| p.requests + p.busy))),
        ("listen queue", json!(sum(&crate::metrics::queue_depth))),
        ("max listen queue", json!(sum(&|p| p.max_queued))),
        (
            "listen queue len",
            // The requests each pool takes in before the 503s start (its permits).
            json!(sum(&|p| p.size.max_in_flight as u64)),
        ),
        (
            "idle processes",
            json!(sum(&|p| p.threads.saturating_sub(p.busy))),
        ),
        ("active processes", json!(sum(&|p| p.busy))),
        ("total processes", json!(sum(&|p| p.threads))),
        ("max active processes", json!(sum(&|p| p.max_busy))),
        (
            "max children reached",
            json!(sum(&|p| p.max_children_reached)),
        ),
        ("slow requests", json!(sum(&|p| p.slow_requests))),
    ]
}

/// php-fpm's process states for ours.
fn fpm_state(s: ThreadState) -> &'static str {
    match s {
        ThreadState::Idle => "Idle",
        ThreadState::Busy => "Running",
        ThreadState::Booting => "Starting",
        ThreadState::Restarting => "Restarting",
        ThreadState::Draining => "Finishing",
        ThreadState::Done => "Finished",
        // Stuck past a deadline and replaced (php-fpm would have killed the process).
        ThreadState::Retired => "Retired",
    }
}

fn process_fields(t: &ThreadInfo) -> Vec<(&'static str, Value)> {
    let now_ms = unix_secs(SystemTime::now()) * 1000;
    let request = t.current.as_deref().or(t.last.as_deref()).unwrap_or("-");
    let (method, uri) = request.split_once(' ').unwrap_or(("-", "-"));
    vec![
        ("pid", json!(t.tid)),
        ("pool", json!(t.pool)),
        ("thread", json!(t.name)),
        ("state", json!(fpm_state(t.state))),
        ("start time", json!(t.started_unix_ms / 1000)),
        (
            "start since",
            json!(now_ms.saturating_sub(t.started_unix_ms) / 1000),
        ),
        ("requests", json!(t.requests)),
        ("request duration", json!(t.request_micros)),
        ("request method", json!(method)),
        ("request uri", json!(uri)),
        ("last request memory", json!(t.memory_bytes)),
    ]
}

fn text_section(out: &mut String, fields: &[(&'static str, Value)]) {
    for (k, v) in fields {
        let key = format!("{k}:");
        let value = match (k, v) {
            (&"start time", Value::Number(n)) => {
                fpm_date(UNIX_EPOCH + std::time::Duration::from_secs(n.as_u64().unwrap_or(0)))
            }
            (_, Value::String(s)) => s.clone(),
            (_, other) => other.to_string(),
        };
        // php-fpm's own layout: "%-22s%s" (the "request URI" key is spelled so there).
        let key = if *k == "request uri" {
            "request URI:".to_owned()
        } else {
            key
        };
        let _ = writeln!(out, "{key:<22}{value}");
    }
}

fn object(fields: Vec<(&'static str, Value)>) -> Map<String, Value> {
    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The page for `query`: (content type, body), or Err for an unknown pool.
pub(crate) fn render(query: &str, setup: &StatusSetup) -> Result<(&'static str, String), String> {
    let mut json_out = false;
    let mut full = false;
    let mut pool = None;
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        match k {
            "json" => json_out = true,
            "full" => full = true,
            "pool" => pool = Some(percent_decode(v)),
            _ => {}
        }
    }
    let infos = worker::observe::pools();
    let selected: Vec<&PoolInfo> = match &pool {
        Some(name) => {
            let found: Vec<_> = infos.iter().filter(|p| &p.name == name).collect();
            if found.is_empty() {
                return Err(format!("no pool {name:?}"));
            }
            found
        }
        None => infos.iter().collect(),
    };
    let head_name = match selected.as_slice() {
        [only] => only.name.clone(),
        _ => "all".to_owned(),
    };
    let head = pool_fields(&head_name, &selected, setup.started);
    let sections: Vec<Vec<(&'static str, Value)>> = if selected.len() > 1 {
        selected
            .iter()
            .map(|&p| pool_fields(&p.name, &[p], setup.started))
            .collect()
    } else {
        Vec::new()
    };
    let names: Vec<&str> = selected.iter().map(|p| p.name.as_str()).collect();
    let threads: Vec<ThreadInfo> = if full {
        worker::observe::threads()
            .into_iter()
            .filter(|t| names.contains(&t.pool.as_str()))
            .collect()
    } else {
        Vec::new()
    };

    if json_out {
        let mut top = object(head);
        if !sections.is_empty() {
            top.insert(
                "pools".into(),
                Value::Array(
                    sections
                        .into_iter()
                        .map(|s| Value::Object(object(s)))
                        .collect(),
                ),
            );
        }
        if full {
            top.insert(
                "processes".into(),
                Value::Array(
                    threads
                        .iter()
                        .map(|t| Value::Object(object(process_fields(t))))
                        .collect(),
                ),
            );
        }
        return Ok(("application/json", Value::Object(top).to_string()));
    }
    let mut out = String::new();
    text_section(&mut out, &head);
    for s in &sections {
        out.push('\n');
        text_section(&mut out, s);
    }
    for t in &threads {
        out.push_str("\n************************\n");
        text_section(&mut out, &process_fields(t));
    }
    Ok(("text/plain", out))
}

/// A query value: `%XX` decoded, `+` as a space (form encoding); other bytes as they are.
fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_query_values_read_like_php_fpm() {
        assert_eq!(
            fpm_date(UNIX_EPOCH + std::time::Duration::from_secs(1_733_227_200)),
            "03/Dec/2024:12:00:00 +0000"
        );
        assert_eq!(percent_decode("%2Fsrv%2Fworker.php"), "/srv/worker.php");
        assert_eq!(percent_decode("a+b%zz%"), "a b%zz%");
    }
}
