//! The configured environment in `$_SERVER`: permanent keys for its names, and for each
//! distinct environment a [`Template`], so a request's `$_SERVER` starts as one block copy
//! of it (see the module doc of `server_vars`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use crate::ffi as sys;

use super::keys::{Key, CGI_NAMES};
use super::text::verbatim_variable_name;
use crate::request::EnvList;

/// Distinct environment variable names given permanent keys, at most (the rest take PHP's
/// registration path): keys are never freed, since worker scripts may keep arrays that use
/// them.
const ENV_KEY_LIMIT: usize = 1024;

/// Permanent keys of configured environment variable names, shared by every thread.
static ENV_KEYS: Mutex<Option<HashMap<Vec<u8>, Key>>> = Mutex::new(None);

thread_local! {
    /// The keys and template of the last environment this thread registered (compared by
    /// pointer, as the server shares one `Arc` between requests, else by content), so a
    /// steady configuration costs no lookup in the shared maps and no allocation.
    static THREAD_ENV: RefCell<Option<ThreadEnv>> = const { RefCell::new(None) };
}

pub(super) struct ThreadEnv {
    env: EnvList,
    pub(super) keys: Vec<Option<Key>>,
    pub(super) template: Option<Template>,
}

/// Runs `f` with this thread's keys and template for `env`, making them if `env` is not
/// the environment it served last.
pub(super) fn with_thread_env<R>(env: &EnvList, f: impl FnOnce(&ThreadEnv) -> R) -> R {
    THREAD_ENV.with(|cache| {
        let mut cache = cache.borrow_mut();
        match &mut *cache {
            Some(known) if Arc::ptr_eq(&known.env, env) => {}
            // Another Arc with the same names (a caller that builds the list per request):
            // the same keys, and the same template unless the values changed.
            Some(known) if same_names(&known.env, env) => {
                if known.env[..] != env[..] {
                    known.template = env_template(env, &known.keys);
                }
                known.env = env.clone();
            }
            _ => {
                let keys = env_keys(env);
                let template = env_template(env, &keys);
                *cache = Some(ThreadEnv {
                    env: env.clone(),
                    keys,
                    template,
                });
            }
        }
        f(cache.as_ref().expect("set above"))
    })
}

/// A sealed persistent array holding one environment as `$_SERVER` starts with it.
#[derive(Clone, Copy)]
pub(super) struct Template(pub(super) *mut sys::HashTable);

// SAFETY: sealed (immutable) once built, before any thread sees it, and made only of
// permanent interned strings, which no copy or refcount ever writes to.
unsafe impl Send for Template {}
// SAFETY: as for Send: a sealed template is only ever read (block-copied), and nothing
// writes to its permanent strings.
unsafe impl Sync for Template {}

/// Distinct environments given a template, at most; like keys, templates are never freed
/// (request copies and worker scripts share their strings).
const ENV_TEMPLATE_LIMIT: usize = 16;

/// Room a template leaves for a request's own variables (the CGI set and its headers), so
/// that the copy takes them without growing.
const TEMPLATE_REQUEST_ROOM: usize = CGI_NAMES.len() + 32;

/// Every environment's template, shared by every thread.
static ENV_TEMPLATES: Mutex<Vec<(EnvList, Template)>> = Mutex::new(Vec::new());

/// The template of `env`, made on first use; None when some name has no permanent key
/// (PHP's own path must mangle it) or the limit is reached.
fn env_template(env: &EnvList, keys: &[Option<Key>]) -> Option<Template> {
    if keys.iter().any(Option::is_none) {
        return None;
    }
    let mut templates = ENV_TEMPLATES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, template)) = templates
        .iter()
        .find(|(known, _)| Arc::ptr_eq(known, env) || known[..] == env[..])
    {
        return Some(*template);
    }
    if templates.len() >= ENV_TEMPLATE_LIMIT {
        return None;
    }
    let capacity = env.len() + TEMPLATE_REQUEST_ROOM;
    // SAFETY: on a PHP thread of a started engine; a persistent array nobody else sees
    // until it is sealed and published below.
    let table = unsafe { sys::ferrophp_server_template_new(capacity as u32) };
    for ((_, value), key) in env.iter().zip(keys.iter().flatten()) {
        let value = value.to_bytes();
        // SAFETY: creates a permanent string (never freed: copies share it); the key is
        // permanent too.
        unsafe {
            let value = sys::ferrophp_permanent_string(value.as_ptr().cast(), value.len());
            sys::ferrophp_server_template_add(table, key.0, value);
        }
    }
    // SAFETY: filled; no write after this.
    unsafe { sys::ferrophp_server_template_seal(table) };
    templates.push((env.clone(), Template(table)));
    Some(Template(table))
}

fn same_names(a: &[(CString, CString)], b: &[(CString, CString)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
}

/// A key per entry of `env` when PHP would register its name verbatim, else None.
fn env_keys(env: &[(CString, CString)]) -> Vec<Option<Key>> {
    let mut shared = ENV_KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let shared = shared.get_or_insert_with(HashMap::new);
    env.iter()
        .map(|(name, _)| {
            let name = name.to_bytes();
            if std::str::from_utf8(name).is_err() || !verbatim_variable_name(name) {
                return None;
            }
            if let Some(key) = shared.get(name) {
                return Some(*key);
            }
            if shared.len() >= ENV_KEY_LIMIT {
                return None;
            }
            // SAFETY: creates a persistent string; we are on a PHP thread of a started
            // engine.
            let key =
                Key(unsafe { sys::ferrophp_permanent_string(name.as_ptr().cast(), name.len()) });
            shared.insert(name.to_vec(), key);
            Some(key)
        })
        .collect()
}
