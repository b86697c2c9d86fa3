//! Sampling as `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` name it (the
//! OpenTelemetry SDK environment specification): `always_on`, `always_off`,
//! `traceidratio`, and their `parentbased_` forms, parent-based `always_on` by default.
//! A parent-based sampler follows the incoming `traceparent`'s sampled flag and applies
//! its root sampler only to requests that start a trace.

use crate::context::{SpanContext, TraceId};

/// The decision for a trace's first span (or every span, without parent-based sampling).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Root {
    /// Sample every trace.
    AlwaysOn,
    /// Sample no trace.
    AlwaysOff,
    /// Sample when the trace id's last 8 bytes, big-endian and shifted right by one,
    /// are below `ratio * 2^63`: the rule the Go and Java SDKs use, so every service
    /// of a trace that samples by ratio decides alike.
    Ratio {
        /// The share of traces sampled (0..=1).
        ratio: f64,
        /// `ratio * 2^63`, what the trace id is compared against.
        bound: u64,
    },
}

/// A sampler as `OTEL_TRACES_SAMPLER` names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    /// What decides when there is no remote parent (or always, without `parent_based`).
    pub root: Root,
    /// Whether a remote parent's sampled flag decides.
    pub parent_based: bool,
}

impl Default for Sampler {
    fn default() -> Self {
        Sampler {
            root: Root::AlwaysOn,
            parent_based: true,
        }
    }
}

fn ratio(arg: Option<&str>) -> Result<Root, String> {
    // The specification's default ratio when the argument is missing.
    let ratio = match arg.map(str::trim).filter(|a| !a.is_empty()) {
        None => 1.0,
        Some(a) => a
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| {
                format!("OTEL_TRACES_SAMPLER_ARG={a:?}: expected a ratio between 0 and 1")
            })?,
    };
    Ok(Root::Ratio {
        ratio,
        bound: (ratio * (1u64 << 63) as f64) as u64,
    })
}

impl Sampler {
    /// From the two variables' values; None picks the default.
    pub fn from_env(name: Option<&str>, arg: Option<&str>) -> Result<Sampler, String> {
        let name = name.map(str::trim).unwrap_or("");
        let (parent_based, root) = match name {
            "" | "parentbased_always_on" => (true, Root::AlwaysOn),
            "parentbased_always_off" => (true, Root::AlwaysOff),
            "parentbased_traceidratio" => (true, ratio(arg)?),
            "always_on" => (false, Root::AlwaysOn),
            "always_off" => (false, Root::AlwaysOff),
            "traceidratio" => (false, ratio(arg)?),
            other => {
                return Err(format!(
                    "OTEL_TRACES_SAMPLER={other:?} is not supported (always_on, always_off, \
                     traceidratio, parentbased_always_on, parentbased_always_off, \
                     parentbased_traceidratio)"
                ))
            }
        };
        Ok(Sampler { root, parent_based })
    }

    /// Whether a request in trace `trace_id` is recorded, given its remote parent.
    pub fn should_sample(&self, parent: Option<&SpanContext>, trace_id: &TraceId) -> bool {
        if self.parent_based {
            if let Some(parent) = parent {
                return parent.is_sampled();
            }
        }
        match self.root {
            Root::AlwaysOn => true,
            Root::AlwaysOff => false,
            Root::Ratio { bound, .. } => {
                let low = u64::from_be_bytes(trace_id.0[8..16].try_into().unwrap());
                (low >> 1) < bound
            }
        }
    }

    /// The description a start-up log line shows.
    pub fn describe(&self) -> String {
        let root = match self.root {
            Root::AlwaysOn => "always_on".to_owned(),
            Root::AlwaysOff => "always_off".to_owned(),
            Root::Ratio { ratio, .. } => format!("traceidratio {ratio}"),
        };
        if self.parent_based {
            format!("parentbased_{root}")
        } else {
            root
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{SpanId, SAMPLED};

    fn parent(flags: u8) -> SpanContext {
        SpanContext {
            trace_id: TraceId([1; 16]),
            span_id: SpanId([2; 8]),
            flags,
        }
    }

    #[test]
    fn parent_based_follows_the_parent_and_roots_use_the_root_sampler() {
        let s = Sampler::from_env(None, None).unwrap();
        assert_eq!(s, Sampler::default());
        assert!(s.should_sample(Some(&parent(SAMPLED)), &TraceId([1; 16])));
        assert!(!s.should_sample(Some(&parent(0)), &TraceId([1; 16])));
        assert!(s.should_sample(None, &TraceId([1; 16])));
        let off = Sampler::from_env(Some("parentbased_always_off"), None).unwrap();
        assert!(!off.should_sample(None, &TraceId([1; 16])));
        assert!(off.should_sample(Some(&parent(SAMPLED)), &TraceId([1; 16])));
        let never = Sampler::from_env(Some("always_off"), None).unwrap();
        assert!(!never.should_sample(Some(&parent(SAMPLED)), &TraceId([1; 16])));
    }

    #[test]
    fn ratio_samples_that_share_of_random_trace_ids() {
        let s = Sampler::from_env(Some("traceidratio"), Some("0.25")).unwrap();
        let n = 100_000;
        let sampled = (0..n)
            .filter(|_| s.should_sample(None, &crate::ids::new_trace_id()))
            .count();
        let share = sampled as f64 / n as f64;
        assert!((0.24..0.26).contains(&share), "{share}");
        // The decision is the trace id's, not a coin toss: the same id, the same answer.
        let id = crate::ids::new_trace_id();
        let first = s.should_sample(None, &id);
        assert!((0..100).all(|_| s.should_sample(None, &id) == first));
        // Edges.
        let all = Sampler::from_env(Some("traceidratio"), Some("1")).unwrap();
        let none = Sampler::from_env(Some("traceidratio"), Some("0")).unwrap();
        let max = TraceId([0xff; 16]);
        assert!(all.should_sample(None, &max));
        assert!(!none.should_sample(None, &TraceId([0; 16])));
    }

    #[test]
    fn refuses_unknown_samplers_and_bad_ratios() {
        assert!(Sampler::from_env(Some("jaeger_remote"), None).is_err());
        for bad in ["2", "-0.1", "half", "NaN"] {
            assert!(
                Sampler::from_env(Some("traceidratio"), Some(bad)).is_err(),
                "{bad}"
            );
        }
    }
}
