//! The `text/event-stream` wire encoding (HTML's Server-Sent Events): an update as one
//! event (`event:`, `retry:`, `id:`, then its data as `data:` lines), and the comment
//! lines the hub sends as heartbeats.

/// A comment line: what the hub sends when a stream opens and, as a heartbeat, when it has
/// been idle (it keeps proxies and old browsers from closing the connection; `EventSource`
/// ignores it).
pub const HEARTBEAT: &[u8] = b":\n";

/// Appends the SSE event of an update to `out`.
///
/// `data` is split on CR, LF and CRLF into one `data:` field per line, as the SSE
/// specification reassembles it (lines joined with LF). `event_type` is written when not
/// empty, `retry` when not zero (as the reference hub does). `id` and `event_type` must not
/// contain CR, LF or NUL (see [`crate::Update::validate`]): they would start new fields.
pub fn encode_event(
    out: &mut Vec<u8>,
    id: &str,
    event_type: Option<&str>,
    retry: Option<u64>,
    data: &str,
) {
    out.reserve(id.len() + data.len() + 16);
    if let Some(t) = event_type.filter(|t| !t.is_empty()) {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(t.as_bytes());
        out.push(b'\n');
    }
    if let Some(r) = retry.filter(|&r| r != 0) {
        out.extend_from_slice(b"retry: ");
        out.extend_from_slice(r.to_string().as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    let bytes = data.as_bytes();
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\ndata: ");
                // CRLF is one line break.
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            b'\n' => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(b"\ndata: ");
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.extend_from_slice(b"\n\n");
}

/// A parsed SSE event, as a client reassembles it (for tests and tools that read a stream).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedEvent {
    /// The `id` field (None when the event had none).
    pub id: Option<String>,
    /// The `event` field.
    pub event_type: Option<String>,
    /// The `retry` field.
    pub retry: Option<u64>,
    /// The `data` fields joined with LF.
    pub data: String,
}

/// Parses a complete `text/event-stream` text into its events, following the HTML
/// specification's interpretation (comments skipped, one leading space after the colon
/// removed, data lines joined with LF, events without data dropped).
pub fn parse_stream(text: &str) -> Vec<ParsedEvent> {
    let mut events = Vec::new();
    let mut current = ParsedEvent::default();
    let mut data: Option<String> = None;
    // Lines end with CRLF, LF or CR.
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    for line in normalized.split('\n') {
        if line.is_empty() {
            if let Some(d) = data.take() {
                current.data = d;
                events.push(std::mem::take(&mut current));
            } else {
                current = ParsedEvent {
                    id: current.id.take(),
                    ..ParsedEvent::default()
                };
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            "id" => current.id = Some(value.to_owned()),
            "event" => current.event_type = Some(value.to_owned()),
            "retry" => current.retry = value.parse().ok(),
            _ => {}
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(id: &str, t: Option<&str>, r: Option<u64>, d: &str) -> String {
        let mut out = Vec::new();
        encode_event(&mut out, id, t, r, d);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_event() {
        assert_eq!(enc("a", None, None, "hello"), "id: a\ndata: hello\n\n");
    }

    #[test]
    fn empty_data_is_one_empty_data_line() {
        assert_eq!(enc("a", None, None, ""), "id: a\ndata: \n\n");
    }

    #[test]
    fn type_and_retry_come_first_and_zero_retry_is_omitted() {
        assert_eq!(
            enc("x", Some("ping"), Some(1500), "d"),
            "event: ping\nretry: 1500\nid: x\ndata: d\n\n"
        );
        assert_eq!(enc("x", Some(""), Some(0), "d"), "id: x\ndata: d\n\n");
    }

    #[test]
    fn every_line_break_starts_a_data_field() {
        assert_eq!(
            enc("i", None, None, "a\nb\r\nc\rd\n"),
            "id: i\ndata: a\ndata: b\ndata: c\ndata: d\ndata: \n\n"
        );
        // CR then LF as separate breaks would be CRLF: one break, not two.
        assert_eq!(
            enc("i", None, None, "\r\n\n"),
            "id: i\ndata: \ndata: \ndata: \n\n"
        );
    }

    #[test]
    fn a_client_reads_back_what_was_published_with_breaks_normalised() {
        for data in [
            "",
            "x",
            "a\nb",
            "a\r\nb\rc",
            "\n\n",
            "line\r",
            " leading space",
        ] {
            let wire = enc("id-1", Some("t"), Some(7), data);
            let events = parse_stream(&wire);
            assert_eq!(events.len(), 1, "{wire:?}");
            let expected = data.replace("\r\n", "\n").replace('\r', "\n");
            assert_eq!(events[0].data, expected);
            assert_eq!(events[0].id.as_deref(), Some("id-1"));
            assert_eq!(events[0].event_type.as_deref(), Some("t"));
            assert_eq!(events[0].retry, Some(7));
        }
    }

    #[test]
    fn heartbeats_are_comments() {
        let mut wire = HEARTBEAT.to_vec();
        encode_event(&mut wire, "a", None, None, "x");
        wire.extend_from_slice(HEARTBEAT);
        let events = parse_stream(std::str::from_utf8(&wire).unwrap());
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "x");
    }
}
