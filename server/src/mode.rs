//! Which side answered a request: the label that requests carry in the access log, in
//! `/metrics` and on their server span.

/// Which side answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Not PHP: static files, redirects, 4xx from routing.
    Static = 0,
    Classic = 1,
    Worker = 2,
    /// The Mercure hub (`/.well-known/mercure` and under it): not PHP, and its event
    /// streams are no static files either.
    Mercure = 3,
}

impl Mode {
    /// The label: `static`, `classic`, `worker` or `mercure`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Static => "static",
            Mode::Classic => "classic",
            Mode::Worker => "worker",
            Mode::Mercure => "mercure",
        }
    }
}
