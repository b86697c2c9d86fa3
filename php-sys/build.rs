//! Finds (or builds) a ZTS + embed libphp, checks it is usable, generates bindings for
//! an allowlisted slice of its API, compiles the C shim, and links libphp with an rpath
//! so binaries run without LD_LIBRARY_PATH.
//!
//! PHP comes from `$PHP_CONFIG` when set, else from `scripts/build-php.sh`, which builds
//! PHP 8.2 once into a cache directory outside the checkout and prints its prefix.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PHP_CONFIG");
    println!("cargo:rerun-if-env-changed=FERROPHP_CACHE");
    println!("cargo:rerun-if-env-changed=FERROPHP_PHP_LINK");
    println!("cargo:rerun-if-env-changed=FERROPHP_PHP_FLAVOR");
    println!("cargo:rerun-if-env-changed=FERROPHP_PHP_VERSION");
    for f in ["wrapper.h", "shim.h", "shim.c", "../scripts/build-php.sh"] {
        println!("cargo:rerun-if-changed={f}");
    }

    let php_config = locate_php_config();
    let prefix = PathBuf::from(php_config_query(&php_config, "--prefix"));
    let include_dir = PathBuf::from(php_config_query(&php_config, "--include-dir"));
    let includes: Vec<String> = php_config_query(&php_config, "--includes")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let features = BuildFeatures::read(&include_dir);
    features.require_usable(&php_config);

    let libdir = prefix.join("lib");
    let link = LinkMode::from_env();
    if link == LinkMode::Shared && !libdir.join("libphp.so").exists() {
        fail(&format!(
            "{} has no lib/libphp.so: PHP was built without `--enable-embed=shared`. \
             ferrophp embeds libphp; rebuild PHP with `--enable-zts --enable-embed` \
             or unset PHP_CONFIG to use scripts/build-php.sh",
            prefix.display()
        ));
    }

    for (cfg, on) in [
        ("php_debug", features.debug),
        ("php_max_execution_timers", features.max_execution_timers),
    ] {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        if on {
            println!("cargo:rustc-cfg={cfg}");
        }
    }

    // Metadata for dependents (DEP_PHP_*): they need the libdir for their own rpath.
    println!("cargo:libdir={}", libdir.display());
    println!("cargo:prefix={}", prefix.display());
    println!("cargo:version_id={}", features.version_id);
    // PHP's include directories (DEP_PHP_INCLUDE, joined like PATH): crates with C files
    // of their own (worker/c/, the cache's) compile against the same headers without
    // running php-config again.
    let include_dirs = includes.iter().filter_map(|f| f.strip_prefix("-I"));
    let joined = env::join_paths(include_dirs)
        .unwrap_or_else(|e| fail(&format!("PHP include dir unusable in a path list: {e}")));
    println!("cargo:include={}", joined.to_string_lossy());
    // This crate's own directory (DEP_PHP_SHIM_INCLUDE): the worker crate's C includes
    // shim.h, whose wrappers it calls.
    println!("cargo:shim_include={}", env!("CARGO_MANIFEST_DIR"));

    println!("cargo:rustc-link-search=native={}", libdir.display());
    match link {
        LinkMode::Shared => println!("cargo:rustc-link-lib=dylib=php"),
        LinkMode::Static => link_static(&php_config, &libdir),
    }
    // Dependents' build scripts read it (DEP_PHP_LINK): a binary with the engine linked in
    // must export its symbols for the extensions PHP loads with dlopen (OPcache, APCu...).
    println!("cargo:link={}", link.name());
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", libdir.display());
    // PHP's CLI SAPI (sapi/cli, with its main() renamed php_cli_main): `ferrophp php-cli`.
    // Only binaries that call php_cli_main pull its objects out of the archive.
    if libdir.join("libphp-cli.a").exists() {
        println!("cargo:rustc-link-lib=static=php-cli");
        println!("cargo:rustc-cfg=php_cli_sapi");
        // For dependents (DEP_PHP_CLI_SAPI): the worker crate offers the CLI only then.
        println!("cargo:cli_sapi=1");
    }
    println!("cargo:rustc-check-cfg=cfg(php_cli_sapi)");
    println!("cargo:rustc-env=FERROPHP_PHP_PREFIX={}", prefix.display());
    println!("cargo:rustc-env=FERROPHP_PHP_VERSION={}", features.version);

    compile_shim(&includes, link);
    generate_bindings(&includes);
}

/// How libphp is linked: `FERROPHP_PHP_LINK=shared` (the default: libphp.so, quick to
/// link into the many test binaries) or `static` (libphp.a inside the binary: no PLT
/// between engine functions, thread-local globals at a fixed offset; what the release
/// ships and the benchmarks measure).
#[derive(Clone, Copy, PartialEq)]
enum LinkMode {
    Shared,
    Static,
}

impl LinkMode {
    fn from_env() -> Self {
        match env::var("FERROPHP_PHP_LINK").as_deref() {
            Err(_) | Ok("") | Ok("shared") => LinkMode::Shared,
            Ok("static") => LinkMode::Static,
            Ok(other) => fail(&format!(
                "FERROPHP_PHP_LINK={other}: expected `shared` or `static`"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            LinkMode::Shared => "shared",
            LinkMode::Static => "static",
        }
    }
}

/// libphp.a whole (every extension registers itself from its object, nothing references
/// those objects by name), then the system libraries PHP was configured with.
fn link_static(php_config: &Path, libdir: &Path) {
    if !libdir.join("libphp.a").exists() {
        fail(&format!(
            "FERROPHP_PHP_LINK=static but {} has no libphp.a: scripts/build-php.sh makes \
             one; a PHP_CONFIG build needs `--enable-embed=static`",
            libdir.display()
        ));
    }
    println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=php");
    let mut seen = std::collections::HashSet::new();
    for flag in php_config_query(php_config, "--libs").split_whitespace() {
        if let Some(lib) = flag.strip_prefix("-l") {
            if seen.insert(lib.to_owned()) {
                println!("cargo:rustc-link-lib=dylib={lib}");
            }
        }
    }
}

fn locate_php_config() -> PathBuf {
    if let Ok(path) = env::var("PHP_CONFIG") {
        return PathBuf::from(path);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/build-php.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env_remove("PHP_CONFIG")
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", script.display())));
    if !out.status.success() {
        fail(&format!(
            "{} failed:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Its warnings (an older PHP than the archive lists, built because the newer
    // source is refused) are shown, never swallowed with the rest of its progress.
    for warning in String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("WARNING"))
    {
        println!("cargo:warning={warning}");
    }
    let prefix = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    PathBuf::from(prefix).join("bin/php-config")
}

fn php_config_query(php_config: &Path, flag: &str) -> String {
    let out = Command::new(php_config)
        .arg(flag)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", php_config.display())));
    if !out.status.success() {
        fail(&format!("{} {flag} failed", php_config.display()));
    }
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// What the build was configured with, read from its own headers (never from a `php`
/// that happens to be on PATH).
struct BuildFeatures {
    zts: bool,
    debug: bool,
    max_execution_timers: bool,
    version: String,
    version_id: u32,
}

impl BuildFeatures {
    fn read(include_dir: &Path) -> Self {
        let config = read_header(&include_dir.join("main/php_config.h"));
        let version_h = read_header(&include_dir.join("main/php_version.h"));
        let defined_as_1 = |name: &str| {
            config
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["#define", name, "1"])
        };
        let define_value = |text: &str, name: &str| -> Option<String> {
            text.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("#define") && it.next() == Some(name))
                    .then(|| it.next().unwrap_or("").trim_matches('"').to_owned())
            })
        };
        let version = define_value(&version_h, "PHP_VERSION")
            .unwrap_or_else(|| fail("php_version.h has no PHP_VERSION"));
        let version_id = define_value(&version_h, "PHP_VERSION_ID")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| fail("php_version.h has no PHP_VERSION_ID"));
        BuildFeatures {
            zts: defined_as_1("ZTS"),
            debug: define_value(&config, "ZEND_DEBUG").as_deref() == Some("1"),
            max_execution_timers: defined_as_1("ZEND_MAX_EXECUTION_TIMERS"),
            version,
            version_id,
        }
    }

    fn require_usable(&self, php_config: &Path) {
        if !self.zts {
            fail(&format!(
                "{} describes a non-thread-safe (NTS) PHP {}. ferrophp runs PHP on several \
                 threads and needs a ZTS build: configure PHP with `--enable-zts --enable-embed`, \
                 or unset PHP_CONFIG to use scripts/build-php.sh",
                php_config.display(),
                self.version
            ));
        }
        if !(80200..80500).contains(&self.version_id) {
            fail(&format!(
                "PHP {} is not supported: ferrophp supports PHP 8.2 to 8.4",
                self.version
            ));
        }
    }
}

fn read_header(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())))
}

fn compile_shim(includes: &[String], link: LinkMode) {
    let mut build = cc::Build::new();
    build
        .file("shim.c")
        .include(".")
        .warnings(false)
        .flag_if_supported("-std=gnu11");
    for inc in includes {
        build.flag(inc);
    }
    // shim.c defines the TSRM cache only when libphp.so keeps the engine's hidden.
    if link == LinkMode::Static {
        build.define("FERROPHP_PHP_STATIC", None);
    }
    build.compile("ferrophp_shim");
}

fn generate_bindings(includes: &[String]) {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(includes)
        .clang_arg("-I.")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_function("ferrophp_.*")
        .allowlist_function("php_(header|handle_auth_data|tsrm_startup|module_startup|module_shutdown|request_startup|request_shutdown|execute_script|register_variable.*|handle_aborted_connection|output_.*|header|get_module_initialized|hash_environment|register_internal_extensions)")
        .allowlist_function("sapi_(startup|shutdown|send_headers|flush|header_op|add_header_ex|handle_post|activate|deactivate|get_default_content_type|register_.*)")
        .allowlist_function("ts_resource_ex|ts_free_thread|tsrm_shutdown|tsrm_get_ls_cache")
        .allowlist_function("zend_(is_auto_global_str|set_memory_limit|memory_reset_peak_usage|ini_long|is_unwind_exit|is_graceful_exit|stream_init_filename|destroy_file_handle|alter_ini_entry_chars|update_current_locale|error|hash_.*|string_.*|eval_string.*|set_timeout|unset_timeout|register_.*|parse_parameters|wrong_parameters_.*|call_function|fcall_info_.*|is_callable.*|throw_exception.*|throw_error|clear_exception|ini_.*|strtod|new_interned_string|interned_strings_.*|llist_.*|get_executed_.*|update_class_constants)")
        .allowlist_function("_?(e|pe)?(malloc|free|realloc|strndup|strdup)|_e(malloc|free|realloc|strndup|strdup)|_safe_emalloc|_emalloc_.*|_efree_.*")
        .allowlist_function("_php_stream_.*|php_stream_.*|php_log_err_with_severity|php_printf|php_write|php_get_uname|php_info_print_table_.*|display_ini_entries")
        .allowlist_function("zval_.*|_zval_.*|rc_dtor_func|array_init_size|add_assoc_.*|add_next_index_.*|add_index_.*|_array_init|object_init_ex|convert_to_.*")
        .allowlist_var("ferrophp_.*|php_import_environment_variables|php_register_internal_extensions_func|sapi_module|zend_ce_.*|zend_empty_string|zend_one_char_string|zend_known_strings|zend_new_interned_string|zend_string_init_interned")
        .allowlist_var("(sapi|core|executor|compiler)_globals_offset")
        // The shared cache (ferrophp-cache): values, objects and errors.
        .allowlist_function("object_init_ex|object_properties_load|_zend_new_array|zend_new_array|zend_array_destroy|zend_array_count|zend_lookup_class|zend_enum_get_case|zend_std_get_properties|zend_type_error|zend_value_error|zend_argument_(type|value)_error|zend_throw_error")
        .allowlist_var("zend_empty_array|zend_standard_class_def")
        .allowlist_var("(PARSE|IS|E|ZEND|PHP|SAPI|TRACK_VARS|GC|IS_STR|IS_ARRAY|HASH|CONST|ZEND_ACC|FERROPHP)_.*")
        .allowlist_type("sapi_.*|zend_.*|php_.*|zval|HashTable|Bucket|_zend_.*|_sapi_.*|_php_.*")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .generate()
        .unwrap_or_else(|e| fail(&format!("bindgen failed: {e}")));
    bindings
        .write_to_file(&out)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", out.display())));
}

fn fail(msg: &str) -> ! {
    eprintln!("\nphp-sys: {msg}\n");
    panic!("php-sys: {msg}");
}
