//! The format end to end on real files: pack a directory, open, verify, extract, and
//! every way a package can be cut, changed, crafted or raced.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::extract::{extract_once, remove_tree};
use crate::format::{Entry, Error, Index, Manifest, ReleaseId, Trailer, HASH_LEN, TRAILER_LEN};
use crate::{Builder, Package, TreeRules};

const LAUNCHER: &[u8] = b"#!launcher bytes\n";

fn release() -> ReleaseId {
    ReleaseId::new("test-1").unwrap()
}

fn manifest() -> Manifest {
    Manifest {
        app_dir: b"app".to_vec(),
        config: Some(b"ferrophp.toml".to_vec()),
        writable: vec![b"var".to_vec()],
        summary: "test app".into(),
    }
}

/// An app: PHP files, a big compressible file, a small incompressible one, an empty
/// directory, an executable, links inside, and a writable `var/` with content.
fn app(dir: &Path) -> PathBuf {
    let app = dir.join("app");
    fs::create_dir_all(app.join("public/assets")).unwrap();
    fs::create_dir_all(app.join("empty")).unwrap();
    fs::create_dir_all(app.join("var/cache")).unwrap();
    fs::create_dir_all(app.join(".git")).unwrap();
    fs::write(app.join(".git/HEAD"), "ref").unwrap();
    fs::write(app.join("public/index.php"), "<?php echo __DIR__;\n").unwrap();
    fs::write(app.join("big.txt"), "ferrophp ".repeat(100_000)).unwrap();
    fs::write(app.join("random.bin"), [0x8f, 0x01, 0xee, 0x42]).unwrap();
    fs::write(app.join("var/cache/old"), "not packed").unwrap();
    fs::write(app.join("bin.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(app.join("bin.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("../big.txt", app.join("public/big.txt")).unwrap();
    symlink(
        app.join("public/index.php"),
        app.join("absolute-inside.php"),
    )
    .unwrap();
    app
}

fn rules() -> TreeRules {
    TreeRules {
        exclude: vec![".git".into()],
        writable: vec!["var".into()],
    }
}

fn pack(dir: &Path, app: &Path) -> PathBuf {
    let mut b = Builder::new(manifest(), 3);
    let report = b.add_tree(b"app", app, &rules()).unwrap();
    assert_eq!(report.files, 4);
    assert_eq!(report.under_writable, 1);
    assert_eq!(report.excluded, 1);
    b.add_bytes(b"ferrophp.toml", b"root = \"public\"\n".to_vec(), false)
        .unwrap();
    let out = dir.join("myapp");
    let written = b.write(LAUNCHER, &release(), &out).unwrap();
    assert_eq!(written.size, fs::metadata(&out).unwrap().len());
    assert_eq!(written.files, 5);
    out
}

#[test]
fn a_packed_directory_extracts_to_the_same_tree_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let out = pack(dir.path(), &app);
    assert_eq!(&fs::read(&out).unwrap()[..LAUNCHER.len()], LAUNCHER);
    assert!(fs::metadata(&out).unwrap().permissions().mode() & 0o111 != 0);

    let pkg = Package::open(&out).unwrap();
    pkg.verify().unwrap();
    pkg.check_release(&release()).unwrap();
    assert_eq!(pkg.launcher(), LAUNCHER);
    let index = pkg.index().unwrap();
    assert_eq!(index.manifest, manifest());
    // Sorted, whatever the directory order: the same input makes the same file.
    let paths: Vec<_> = index.entries.iter().map(|e| e.path().to_vec()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);

    let data = dir.path().join("data");
    let tree = dir.path().join("cache/key");
    assert!(extract_once(&pkg, &index, &tree, &data).unwrap());
    assert!(!extract_once(&pkg, &index, &tree, &data).unwrap(), "once");
    let t = |p: &str| tree.join(p);
    assert_eq!(
        fs::read_to_string(t("app/public/index.php")).unwrap(),
        "<?php echo __DIR__;\n"
    );
    assert_eq!(
        fs::read(t("app/big.txt")).unwrap(),
        fs::read(app.join("big.txt")).unwrap()
    );
    assert_eq!(
        fs::read(t("app/random.bin")).unwrap(),
        [0x8f, 0x01, 0xee, 0x42]
    );
    assert_eq!(
        fs::read_link(t("app/public/big.txt")).unwrap(),
        Path::new("../big.txt")
    );
    // The absolute link inside the app was stored relative.
    assert_eq!(
        fs::read_link(t("app/absolute-inside.php")).unwrap(),
        Path::new("public/index.php")
    );
    assert_eq!(fs::read_link(t("app/var")).unwrap(), data.join("var"));
    assert!(t("app/empty").is_dir());
    assert!(!t("app/.git").exists());
    assert_eq!(
        fs::read_to_string(t("ferrophp.toml")).unwrap(),
        "root = \"public\"\n"
    );
    let mode = |p: &str| fs::symlink_metadata(t(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("app/public/index.php"), 0o444);
    assert_eq!(mode("app/bin.sh"), 0o555);
    assert_eq!(mode("app/public"), 0o555);
    assert_eq!(mode(""), 0o555);
    // Nothing left beside it.
    let names: Vec<_> = fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["key"]);
    remove_tree(&tree);
    assert!(!tree.exists());
}

#[test]
fn the_same_input_makes_the_same_package() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let first = fs::read(pack(dir.path(), &app)).unwrap();
    let second = fs::read(pack(dir.path(), &app)).unwrap();
    assert!(first == second, "two packings of one directory differ");
}

#[test]
fn a_changed_byte_anywhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = pack(dir.path(), &app(dir.path()));
    let good = fs::read(&out).unwrap();
    let pkg = Package::open(&out).unwrap();
    let t = pkg.trailer().clone();
    drop(pkg);
    // In the launcher, in a file's bytes, in the index, in the trailer's release field,
    // in the hash itself.
    let places = [
        1,
        t.payload_offset as usize + 3,
        t.index_offset as usize + 10,
        good.len() - TRAILER_LEN + 45,
        good.len() - 1,
    ];
    for at in places {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        let file = dir.path().join("bad");
        fs::write(&file, &bad).unwrap();
        let pkg = Package::open(&file).unwrap();
        let err = pkg.verify().unwrap_err();
        assert!(matches!(err, Error::Tampered(_)), "byte {at}: {err}");
        assert!(
            err.to_string().contains("modified after it was made"),
            "{err}"
        );
    }
}

#[test]
fn a_cut_or_extended_package_is_not_a_package() {
    let dir = tempfile::tempdir().unwrap();
    let out = pack(dir.path(), &app(dir.path()));
    let good = fs::read(&out).unwrap();
    let file = dir.path().join("cut");
    for len in [0, 10, good.len() / 2, good.len() - 1] {
        fs::write(&file, &good[..len]).unwrap();
        let err = Package::open(&file).err().expect("refused");
        assert!(matches!(err, Error::NotAPackage(_)), "{len}: {err}");
    }
    let mut longer = good.clone();
    longer.extend_from_slice(b"appended");
    fs::write(&file, &longer).unwrap();
    assert!(matches!(Package::open(&file), Err(Error::NotAPackage(_))));
}

#[test]
fn a_payload_of_another_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = pack(dir.path(), &app(dir.path()));
    let pkg = Package::open(&out).unwrap();
    let err = pkg
        .check_release(&ReleaseId::new("test-2").unwrap())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("release test-1, this launcher is release test-2"),
        "{err}"
    );
}

/// A package with this index, hashed as `ferrophp package` would: what a crafted file
/// looks like to the launcher.
fn craft(path: &Path, blobs: &[u8], index: &Index) {
    let mut bytes = LAUNCHER.to_vec();
    bytes.extend_from_slice(blobs);
    let index_bytes = index.encode();
    let trailer = Trailer {
        payload_offset: LAUNCHER.len() as u64,
        index_offset: bytes.len() as u64,
        index_len: index_bytes.len() as u64,
        release: release(),
        hash: [0; HASH_LEN],
    };
    bytes.extend_from_slice(&index_bytes);
    bytes.extend_from_slice(&trailer.encode_fields());
    let hash = blake3::hash(&bytes);
    bytes.extend_from_slice(hash.as_bytes());
    fs::write(path, bytes).unwrap();
}

#[test]
fn crafted_paths_and_links_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let file = |path: &[u8]| Entry::File {
        path: path.to_vec(),
        executable: false,
        codec: crate::format::Codec::Stored,
        offset: 0,
        stored_len: 4,
        size: 4,
    };
    let cases: Vec<Vec<Entry>> = vec![
        vec![file(b"app/../../escaped")],
        vec![file(b"/tmp/escaped")],
        vec![Entry::Symlink {
            path: b"app/out".to_vec(),
            target: b"../../..".to_vec(),
        }],
        vec![Entry::Symlink {
            path: b"app/out".to_vec(),
            target: b"/etc".to_vec(),
        }],
    ];
    for entries in cases {
        let pkg_path = dir.path().join("crafted");
        let index = Index {
            manifest: manifest(),
            entries: entries.clone(),
        };
        craft(&pkg_path, b"evil", &index);
        let pkg = Package::open(&pkg_path).unwrap();
        pkg.verify().unwrap();
        let err = pkg.index().unwrap_err();
        assert!(matches!(err, Error::Unsafe(_)), "{entries:?}: {err}");
    }
    assert!(!dir.path().parent().unwrap().join("escaped").exists());
}

#[test]
fn a_file_written_through_a_packed_link_is_refused() {
    // `app/dir` a link (inside the tree) and `app/dir/x` a file: the file would be
    // written through the link. Directories are made before links, so the file lands in
    // a real directory and the link then collides with it.
    let dir = tempfile::tempdir().unwrap();
    let pkg_path = dir.path().join("crafted");
    let index = Index {
        manifest: manifest(),
        entries: vec![
            Entry::Symlink {
                path: b"app/dir".to_vec(),
                target: b"..".to_vec(),
            },
            Entry::File {
                path: b"app/dir/x".to_vec(),
                executable: false,
                codec: crate::format::Codec::Stored,
                offset: 0,
                stored_len: 4,
                size: 4,
            },
        ],
    };
    craft(&pkg_path, b"evil", &index);
    let pkg = Package::open(&pkg_path).unwrap();
    let index = pkg.index().unwrap();
    let tree = dir.path().join("cache/key");
    let err = extract_once(&pkg, &index, &tree, &dir.path().join("data")).unwrap_err();
    assert!(err.to_string().contains("app/dir"), "{err}");
    assert!(!tree.exists());
    assert!(!dir.path().join("x").exists());
    // Nothing half-made is left in the cache.
    assert_eq!(fs::read_dir(dir.path().join("cache")).unwrap().count(), 0);
}

#[test]
fn links_leaving_the_app_and_special_files_are_refused_at_packing() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    fs::create_dir_all(app.join("public")).unwrap();
    fs::write(dir.path().join("secret"), "outside").unwrap();
    for (target, name) in [
        (dir.path().join("secret"), "abs"),
        (PathBuf::from("../../secret"), "rel"),
        (PathBuf::from("/etc/passwd"), "etc"),
    ] {
        let link = app.join("public").join(name);
        symlink(&target, &link).unwrap();
        let mut b = Builder::new(manifest(), 3);
        let err = b.add_tree(b"app", &app, &TreeRules::default()).unwrap_err();
        assert!(matches!(err, Error::Unsafe(_)), "{err}");
        assert!(
            err.to_string().contains("leaves the app directory"),
            "{err}"
        );
        fs::remove_file(&link).unwrap();
    }
    // A link inside that resolves outside through another link.
    symlink(dir.path(), app.join("up")).unwrap();
    let mut b = Builder::new(manifest(), 3);
    assert!(b.add_tree(b"app", &app, &TreeRules::default()).is_err());
    fs::remove_file(app.join("up")).unwrap();
    // A FIFO.
    let fifo = app.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let mut b = Builder::new(manifest(), 3);
    let err = b.add_tree(b"app", &app, &TreeRules::default()).unwrap_err();
    assert!(err.to_string().contains("device, FIFO or socket"), "{err}");
}

/// Extracted files must be old enough for OPcache (`opcache.file_update_protection`
/// refuses files younger than 2 s): they carry the package's time, clamped to a minute
/// before the extraction for a package copied a moment ago.
#[test]
fn extracted_files_carry_a_time_opcache_caches_at_once() {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let out = pack(dir.path(), &app);
    let mtime = |p: &Path| fs::metadata(p).unwrap().modified().unwrap();

    // A package made just now: its files are stamped a minute back.
    let pkg = Package::open(&out).unwrap();
    let index = pkg.index().unwrap();
    let fresh = dir.path().join("cache/fresh");
    let before = SystemTime::now();
    extract_once(&pkg, &index, &fresh, &dir.path().join("data")).unwrap();
    let stamped = mtime(&fresh.join("app/public/index.php"));
    assert!(stamped <= before - Duration::from_secs(59), "{stamped:?}");
    assert!(stamped >= before - Duration::from_secs(120), "{stamped:?}");

    // An older package: its own time, the same for every file.
    let built = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    fs::File::options()
        .write(true)
        .open(&out)
        .unwrap()
        .set_modified(built)
        .unwrap();
    let pkg = Package::open(&out).unwrap();
    let old = dir.path().join("cache/old");
    extract_once(&pkg, &index, &old, &dir.path().join("data")).unwrap();
    for file in [
        "app/public/index.php",
        "app/big.txt",
        "app/bin.sh",
        "ferrophp.toml",
    ] {
        assert_eq!(mtime(&old.join(file)), built, "{file}");
    }
    remove_tree(&fresh);
    remove_tree(&old);
}

#[test]
fn concurrent_first_starts_extract_once_and_agree() {
    let dir = tempfile::tempdir().unwrap();
    let out = pack(dir.path(), &app(dir.path()));
    let tree = dir.path().join("cache/key");
    let data = dir.path().join("data");
    let extracted: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let pkg = Package::open(&out).unwrap();
                    let index = pkg.index().unwrap();
                    extract_once(&pkg, &index, &tree, &data).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(extracted.iter().any(|&e| e), "{extracted:?}");
    assert!(tree.join("app/big.txt").is_file());
    let names: Vec<_> = fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["key"], "temporary trees left behind");
}

#[test]
fn an_abandoned_temporary_tree_is_removed_by_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = pack(dir.path(), &app(dir.path()));
    let cache = dir.path().join("cache");
    // A pid that cannot exist (above pid_max's ceiling).
    let abandoned = cache.join(".key.tmp-99999999-1");
    fs::create_dir_all(abandoned.join("app")).unwrap();
    fs::set_permissions(&abandoned, fs::Permissions::from_mode(0o555)).unwrap();
    let pkg = Package::open(&out).unwrap();
    let index = pkg.index().unwrap();
    extract_once(&pkg, &index, &cache.join("key"), &dir.path().join("data")).unwrap();
    assert!(!abandoned.exists());
}
