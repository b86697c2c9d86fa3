//! Informational (1xx) responses before the final one: `headers_send(103)` (103 Early
//! Hints) from a PHP script. A request carries its protocol's [`Hints`] in its
//! extensions, put there by the protocol that read it (`serve/connection/interim.rs` for
//! HTTP/1.1 and HTTP/2); whoever answers the request sends 1xx heads through it without
//! knowing which protocol carries them.

use std::sync::Arc;

use worker::ResponseHead;

/// One protocol's way of sending a 1xx response ahead of a request's final response.
pub(crate) trait SendInformational: Send + Sync {
    /// Sends the 1xx response `status` with `headers` (valid fields only); one that can
    /// no longer be sent (the final response has gone) is dropped, as a hint may be.
    fn send_informational(&self, status: http::StatusCode, headers: &http::HeaderMap);
}

/// Where one request's 1xx responses go.
#[derive(Clone)]
pub(crate) struct Hints(Arc<dyn SendInformational>);

impl Hints {
    pub(crate) fn new(protocol: Arc<dyn SendInformational>) -> Hints {
        Hints(protocol)
    }

    /// Sends `head` on its way; one without a 1xx status is dropped.
    pub(crate) fn send(&self, head: &ResponseHead) {
        let Ok(status) = http::StatusCode::from_u16(head.status) else {
            return;
        };
        if status.is_informational() {
            self.0.send_informational(status, &head.headers);
        }
    }
}
