//! The load generator for every workload but the mixed one: wrk, 2 threads, keep-alive
//! connections, its own latency percentiles. What wrk counts as an error by itself is a
//! socket error or a status of 400 and above; a redirect would pass. Real-app workloads
//! therefore add a Lua `response()` hook that counts every status outside 200..=299
//! (wrk's threads each count in their own Lua state; `done()` adds them up and prints one
//! line). The hook costs wrk a Lua call per response, which is why the synthetic
//! workloads, at tens of thousands of requests per second on a shared 2-core machine,
//! go without it.

use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct WrkResult {
    pub(crate) requests_per_sec: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) errors: u64,
}

/// What a run's Lua script does, if anything.
#[derive(Default)]
pub(crate) struct Script {
    /// POST a body of this many bytes.
    pub(crate) post_body: Option<usize>,
    /// Rotate `PHPSESSID` cookies over this many ids.
    pub(crate) session_ids: Option<usize>,
    /// Count non-2xx responses (see the module doc).
    pub(crate) count_non_2xx: bool,
}

const NON_2XX_LINE: &str = "compare-non-2xx:";

impl Script {
    /// Writes the script into `dir` (named after what it does); `None` when it does
    /// nothing.
    pub(crate) fn write(&self, dir: &Path) -> Result<Option<PathBuf>, String> {
        let mut lua = String::new();
        let mut name = String::from("wrk");
        if let Some(size) = self.post_body {
            name.push_str(&format!("-post{size}"));
            lua.push_str(&format!(
                "wrk.method = \"POST\"\nwrk.body = string.rep(\"x\", {size})\nwrk.headers[\"Content-Type\"] = \"text/plain\"\n"
            ));
        }
        if let Some(ids) = self.session_ids {
            // Session ids PHP accepts as they are (use_strict_mode is off in both).
            name.push_str(&format!("-sessions{ids}"));
            lua.push_str(&format!(
                "math.randomseed(42)\nrequest = function()\n  return wrk.format(nil, nil, {{ Cookie = \"PHPSESSID=bench\" .. math.random(1, {ids}) }})\nend\n"
            ));
        }
        if self.count_non_2xx {
            name.push_str("-non2xx");
            lua.push_str(&format!(
                r#"local threads = {{}}
function setup(thread) table.insert(threads, thread) end
function init(args) non2xx = 0 end
function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + (t:get("non2xx") or 0) end
  io.write("{NON_2XX_LINE} " .. n .. "\n")
end
"#
            ));
        }
        if lua.is_empty() {
            return Ok(None);
        }
        let file = dir.join(format!("{name}.lua"));
        std::fs::write(&file, lua).map_err(|e| format!("{}: {e}", file.display()))?;
        Ok(Some(file))
    }
}

pub(crate) fn run(
    url: &str,
    connections: u32,
    seconds: u64,
    lua: Option<&Path>,
) -> Result<WrkResult, String> {
    let mut cmd = Command::new("wrk");
    cmd.args([
        "-t",
        "2",
        "-c",
        &connections.to_string(),
        "-d",
        &format!("{seconds}s"),
        "--latency",
        "--timeout",
        "10s",
    ]);
    if let Some(lua) = lua {
        cmd.arg("-s").arg(lua);
    }
    let out = cmd
        .arg(url)
        .output()
        .map_err(|e| format!("wrk: {e} (apt-get install -y wrk)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {text}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(parse(&text))
}

fn parse(text: &str) -> WrkResult {
    let mut result = WrkResult {
        requests_per_sec: 0.0,
        p50_ms: 0.0,
        p99_ms: 0.0,
        errors: 0,
    };
    let mut over_399 = 0;
    let mut non_2xx = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            result.requests_per_sec = v.trim().parse().unwrap_or(0.0);
        } else if let Some(v) = line.strip_prefix("50%") {
            result.p50_ms = parse_duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("99%") {
            result.p99_ms = parse_duration_ms(v.trim());
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            over_399 = v.trim().parse::<u64>().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix(NON_2XX_LINE) {
            non_2xx = v.trim().parse::<u64>().ok();
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            result.errors += v
                .split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    // The Lua count includes wrk's own (status >= 400); never both.
    result.errors += non_2xx.unwrap_or(over_399);
    result
}

fn parse_duration_ms(text: &str) -> f64 {
    let (number, unit): (String, String) =
        text.chars().partition(|c| c.is_ascii_digit() || *c == '.');
    let value: f64 = number.parse().unwrap_or(0.0);
    match unit.trim() {
        "us" => value / 1000.0,
        "ms" => value,
        "s" => value * 1000.0,
        "m" => value * 60_000.0,
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lua_count_replaces_wrk_own_and_socket_errors_add() {
        let text = "  Latency Distribution\n     50%    2.10ms\n     99%    1.20s\n  Socket errors: connect 0, read 2, write 0, timeout 1\n  Non-2xx or 3xx responses: 4\nRequests/sec:   1234.50\ncompare-non-2xx: 9\n";
        let r = parse(text);
        assert_eq!(r.requests_per_sec, 1234.5);
        assert_eq!(r.p50_ms, 2.1);
        assert_eq!(r.p99_ms, 1200.0);
        assert_eq!(r.errors, 12);
        let r = parse("Non-2xx or 3xx responses: 4\n");
        assert_eq!(r.errors, 4);
    }
}
