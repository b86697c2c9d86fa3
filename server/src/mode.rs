//! Which side answered a request: the label that requests carry in the access log, in
//! `/metrics` and on their server span.

/// Which side answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Not PHP: static files, redirects, 4xx from routing.
    Static = 0,
    Classic = 1,
    Worker = 2,
}

impl Mode {
    /// The label: `static`, `classic` or `worker`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Static => "static",
            Mode::Classic => "classic",
            Mode::Worker => "worker",
        }
    }
}
