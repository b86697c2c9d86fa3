//! Server-side 1xx informational responses (such as 103 Early Hints) on HTTP/2.
//!
//! Not part of upstream hyper 1.12.0: carried as a patch (see the patches directory
//! next to this vendored crate) until hyper exposes h2's `send_informational`.

use futures_channel::mpsc;
use http::Response;

/// Sends 1xx informational responses ahead of the final response of one HTTP/2
/// request.
///
/// hyper's HTTP/2 server puts one in the extensions of every request it hands to the
/// service. Each response sent is written as a HEADERS frame (without END_STREAM) on
/// the request's stream by the task that later writes the final response, so it always
/// precedes it; once the final response is written, sending fails.
///
/// ```rust
/// # fn handle(req: &http::Request<()>) {
/// if let Some(hints) = req.extensions().get::<hyper::ext::InformationalSender>() {
///     let early_hints = http::Response::builder()
///         .status(103)
///         .header("link", "</style.css>; rel=preload; as=style")
///         .body(())
///         .unwrap();
///     let _ = hints.send(early_hints);
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct InformationalSender {
    tx: mpsc::UnboundedSender<Response<()>>,
}

impl InformationalSender {
    pub(crate) fn channel() -> (Self, mpsc::UnboundedReceiver<Response<()>>) {
        let (tx, rx) = mpsc::unbounded();
        (InformationalSender { tx }, rx)
    }

    /// Queues `response` to be sent before the final response.
    ///
    /// Gives the response back when its status is not 1xx (101 included: HTTP/2 has no
    /// protocol switching), or when it can no longer precede the final response (that
    /// one is already written, or the stream has ended).
    pub fn send(&self, response: Response<()>) -> Result<(), Response<()>> {
        let status = response.status();
        if !status.is_informational() || status == http::StatusCode::SWITCHING_PROTOCOLS {
            return Err(response);
        }
        self.tx.unbounded_send(response).map_err(|e| e.into_inner())
    }
}
