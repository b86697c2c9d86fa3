//! A trace span per publish (`mercure.publish`, kind producer), through ferrophp's own
//! OTLP exporter when tracing is installed: a child of the caller's span when there is
//! one (the request that published), else a root the sampler decides on.

use ferrophp_trace::{ids, AttrValue, Kind, SpanContext, SpanData, StatusCode, Value, SAMPLED};

/// A publish span being recorded (nothing when tracing is off or not sampled).
pub(crate) struct PublishSpan {
    data: Option<SpanData>,
}

impl PublishSpan {
    pub(crate) fn start(parent: Option<&SpanContext>) -> PublishSpan {
        let Some(tracing) = ferrophp_trace::get() else {
            return PublishSpan { data: None };
        };
        let trace_id = parent.map_or_else(ids::new_trace_id, |p| p.trace_id);
        if !tracing.sampler.should_sample(parent, &trace_id) {
            return PublishSpan { data: None };
        }
        let mut data = SpanData::with_capacity(256);
        data.trace_id = trace_id;
        data.span_id = ids::new_span_id();
        data.parent = parent.map(|p| p.span_id);
        data.flags = SAMPLED;
        data.kind = Kind::Producer;
        data.set_name(b"mercure.publish");
        data.start_unix_nano = ferrophp_trace::now_unix_nano();
        PublishSpan { data: Some(data) }
    }

    /// Whether a span is being recorded.
    pub(crate) fn is_recording(&self) -> bool {
        self.data.is_some()
    }

    /// Ends the span with the update's attributes and the outcome.
    pub(crate) fn finish(
        mut self,
        id: Option<&str>,
        topics: &[String],
        private: bool,
        error: Option<&str>,
    ) {
        let (Some(mut data), Some(tracing)) = (self.data.take(), ferrophp_trace::get()) else {
            return;
        };
        let limits = tracing.limits;
        if let Some(id) = id {
            data.push_attribute("mercure.update.id", Value::Text(id), &limits);
        }
        let topic_values: Vec<Value<'_>> = topics.iter().map(|t| Value::Text(t)).collect();
        data.push_attribute("mercure.topics", AttrValue::Array(&topic_values), &limits);
        data.push_attribute("mercure.private", Value::Bool(private), &limits);
        if let Some(e) = error {
            data.status = StatusCode::Error;
            data.status_message = e.to_owned();
        }
        data.end_unix_nano = ferrophp_trace::now_unix_nano();
        let mut bytes = tracing.buffer();
        data.encode_into(&mut bytes);
        tracing.export(ferrophp_trace::Chunk { bytes, spans: 1 });
    }
}
