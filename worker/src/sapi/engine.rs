//! Engine start-up and shut-down, on the engine's main thread, and attaching each PHP
//! thread to the engine for its whole life.

use std::ffi::{c_int, CString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::ffi as sys;

use super::callbacks::{
    import_environment, sapi_module, INI_DEFAULTS, LOG_TARGET, PROCESS_ENV_IMPORT,
};
use super::settings::{ModuleSettings, SapiName};
use crate::server_vars;

/// The SAPI module and the strings it points to, which PHP uses until module shutdown.
pub(crate) struct StartedModule(*mut sys::sapi_module_struct);

// SAFETY: the module is only touched by the engine's main thread, which owns this value.
unsafe impl Send for StartedModule {}

/// Starts the engine on the calling thread, which becomes the engine's main PHP thread
/// and must later call [`engine_shutdown`]. Once per process.
pub(crate) fn engine_startup(settings: &ModuleSettings) -> Result<StartedModule, String> {
    let _ = LOG_TARGET.set(settings.log_target);
    // The release tree's defaults first, so the caller's own defaults win over them.
    let mut defaults = crate::layout::ini_defaults();
    defaults.extend(settings.ini_defaults.iter().cloned());
    let _ = INI_DEFAULTS.set(defaults);
    let name = settings.sapi_name.as_cstr();
    let module: &'static mut sys::sapi_module_struct = Box::leak(Box::new(sapi_module(name)));
    let ini = CString::new(settings.ini_entries.clone())
        .map_err(|_| "ini entries contain a NUL byte".to_owned())?;
    let ini_path = match &settings.php_ini {
        Some(p) => Some(
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| "php.ini path contains a NUL byte".to_owned())?,
        ),
        None => None,
    };

    // SAFETY: called once per process (enforced by Engine::start) on a thread that has
    // not touched PHP; php_tsrm_startup allocates this thread's TSRM context.
    unsafe {
        if !sys::php_tsrm_startup() {
            return Err("php_tsrm_startup failed".into());
        }
        sys::ferrophp_thread_started();
        sys::zend_update_current_locale();
        sys::sapi_startup(module);
    }
    // sapi_startup clears ini_entries; set our settings after it, before module start-up.
    module.ini_entries = ini.into_raw();
    if let Some(p) = ini_path {
        module.php_ini_path_override = p.into_raw();
    }
    module.php_ini_ignore = c_int::from(settings.no_php_ini);
    // phpinfo() prints text under the CLI (as sapi/cli sets it), HTML for HTTP.
    module.phpinfo_as_text = c_int::from(settings.sapi_name == SapiName::Cli);
    module.php_ini_ignore_cwd = 1;
    // PHP looks for php.ini next to its binary (after -c and PHPRC) and sets PHP_BINARY
    // from this path: ours, wherever the release tree was moved; in a one-file package,
    // the package file (`layout` then points PHPRC at the package's tree).
    if let Some(exe) = crate::layout::executable()
        .ok()
        .and_then(|p| CString::new(p.into_os_string().into_vec()).ok())
    {
        module.executable_location = exe.into_raw();
    }

    // SAFETY: registers a plain function pointer PHP calls once during module start-up.
    unsafe { sys::ferrophp_on_post_startup(Some(crate::opcache_guard::install)) };
    // SAFETY: no PHP code runs yet and no other thread touches PHP; the pointer is PHP's
    // global hook for filling $_ENV (and the CLI's $_SERVER), replaced once as FrankenPHP
    // does.
    unsafe {
        let _ = PROCESS_ENV_IMPORT.set(sys::php_import_environment_variables);
        sys::php_import_environment_variables = Some(import_environment);
    }
    // SAFETY: module is 'static and fully initialised; sapi_startup ran on this thread.
    let started = unsafe { sys::php_module_startup(module, sys::ferrophp_module_entry()) };
    if started != sys::ZEND_RESULT_CODE_SUCCESS {
        return Err("php_module_startup failed (see the errors above)".into());
    }
    server_vars::init();
    crate::deadline::install();
    // SAFETY: module start-up is done and no request runs yet; c/input.c only swaps the
    // treat_data pointer of PHP's global sapi_module for its wrapper.
    let fast_input = unsafe { sys::ferrophp_install_treat_data() };
    #[cfg(feature = "bench-fixtures")]
    crate::diagnostics::record_fast_input_installed(fast_input);
    tracing::debug!(fast_input, "$_COOKIE and $_GET parsing");
    Ok(StartedModule(module))
}

/// Shuts the engine down. Only after every other PHP thread has released its context.
pub(crate) fn engine_shutdown(module: StartedModule) {
    // SAFETY: called once, on the thread that ran engine_startup, after all pool threads
    // have called ts_free_thread (Engine joins them first). PHP no longer reads the
    // module once tsrm_shutdown returns, so its box and strings can be freed.
    unsafe {
        sys::php_module_shutdown();
        sys::sapi_shutdown();
        sys::tsrm_shutdown();
        let module = Box::from_raw(module.0);
        for s in [
            module.ini_entries,
            module.php_ini_path_override,
            module.executable_location,
        ] {
            if !s.is_null() {
                drop(CString::from_raw(s));
            }
        }
    }
}

/// Gives the calling (new) thread its own TSRM context, for its whole life, and its own
/// umask, working directory and locale: PHP's `umask()`, `chdir()` and `setlocale()` act
/// on process-wide state that one request must not change under the others.
pub(crate) fn attach_thread() {
    // SAFETY: unshare(CLONE_FS) only detaches this thread's umask, cwd and root from the
    // rest of the process (each starts as a copy); no pointer is involved. On failure
    // (a seccomp filter, say) the thread keeps sharing them, as before.
    if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
        let why = std::io::Error::last_os_error();
        // Every PHP thread fails alike (a container's seccomp profile refuses the call
        // without CAP_SYS_ADMIN): one line says it for all of them.
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::warn!(
                "unshare(CLONE_FS) failed ({why}): umask() in one request affects the others \
                 (said once for all PHP threads)"
            );
        });
    }
    // SAFETY: the engine is started (threads are spawned after engine_startup) and this
    // thread has no context yet; ts_resource_ex(0, NULL) allocates one for it. The locale
    // reset makes this thread's own locale object (and updates PHP's view of it).
    unsafe {
        sys::ts_resource_ex(0, std::ptr::null_mut());
        sys::ferrophp_thread_started();
        sys::ferrophp_locale_thread_reset();
    }
    crate::stack::remember_bounds();
}

/// Releases the calling thread's TSRM context. Must be the thread's last PHP call.
pub(crate) fn detach_thread() {
    // SAFETY: this thread attached with attach_thread and runs no request now; the
    // execution timer run_script kept alive is this thread's own, deleted once; the
    // persistent list is this thread's own and its destructors run outside a request
    // anyway (at module shutdown, normally); so is the locale object, unused once the
    // thread's PHP context is gone.
    unsafe {
        sys::ferrophp_execution_timer_release();
        // Persistent connections close before TSRM frees module globals their
        // destructors use (pgsql's would write into freed memory).
        sys::ferrophp_persistent_list_release();
        sys::ts_free_thread();
        sys::ferrophp_locale_thread_release();
    }
}
