//! Prometheus text exposition (format 0.0.4) of a [`Snapshot`]: distributions as
//! summaries (quantiles 0.5, 0.9, 0.99 plus `_sum` and `_count`), counters, gauges.

use std::fmt::Write;

use crate::registry::{Snapshot, Value};

/// Quantiles every summary reports.
pub const QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn labels(out: &mut String, tags: &[(String, String)], extra: Option<(&str, &str)>) {
    if tags.is_empty() && extra.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(extra)
    {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(k);
        out.push_str("=\"");
        escape_label(out, v);
        out.push('"');
    }
    out.push('}');
}

fn num(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        let _ = write!(out, "{v}");
    }
}

/// `# HELP` text: backslashes and newlines escaped (the text format's rule).
fn help_text(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// What a family recorded from PHP says in its `# HELP` line (its name is all we know).
pub const PHP_HELP: &str = "Recorded by PHP code (Ferrophp\\Metrics).";

/// Appends the exposition of `snap` to `out`. Series arrive sorted by name, so each
/// metric family's `# HELP` and `# TYPE` lines are written once, before its samples;
/// `help` gives a family's help text (None: [`PHP_HELP`]).
pub fn render(out: &mut String, snap: &Snapshot, help: impl Fn(&str) -> Option<&'static str>) {
    let mut last_name: Option<&str> = None;
    for s in &snap.series {
        let name = s.meta.name.as_str();
        if last_name != Some(name) {
            let t = match s.value {
                Value::Distribution(_) => "summary",
                Value::Counter(_) => "counter",
                Value::Gauge(_) => "gauge",
            };
            let _ = write!(out, "# HELP {name} ");
            help_text(out, help(name).unwrap_or(PHP_HELP));
            let _ = writeln!(out, "\n# TYPE {name} {t}");
            last_name = Some(name);
        }
        match &s.value {
            Value::Distribution(d) => {
                for q in QUANTILES {
                    out.push_str(name);
                    let qs = q.to_string();
                    labels(out, &s.meta.tags, Some(("quantile", &qs)));
                    out.push(' ');
                    num(out, d.quantile(q).unwrap_or(f64::NAN));
                    out.push('\n');
                }
                let _ = write!(out, "{name}_sum");
                labels(out, &s.meta.tags, None);
                out.push(' ');
                num(out, d.sum());
                out.push('\n');
                let _ = write!(out, "{name}_count");
                labels(out, &s.meta.tags, None);
                out.push(' ');
                num(out, d.count());
                out.push('\n');
            }
            Value::Counter(v) | Value::Gauge(v) => {
                out.push_str(name);
                labels(out, &s.meta.tags, None);
                out.push(' ');
                num(out, *v);
                out.push('\n');
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP ferrophp_metrics_series Series in the metrics registry (PHP's and the server's).\n\
         # TYPE ferrophp_metrics_series gauge\nferrophp_metrics_series {}\n\
         # HELP ferrophp_metrics_dropped_total Records dropped because they would have created \
         a series past --metrics-max-series.\n\
         # TYPE ferrophp_metrics_dropped_total counter\nferrophp_metrics_dropped_total {}",
        snap.series_count, snap.dropped
    );
}
