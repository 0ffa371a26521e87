//! The bytes our pack routines make are the bytes Debian's PVM 3.4.6 makes, and a program
//! compiled against Debian's `pvm3.h` reads the same values back through our library as
//! through Debian's: `tests/c/packs.c` packs every type (with strides, strings, `pvm_packf`)
//! in XDR and raw encodings, prints the bytes and what unpacks, and the outputs are compared.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Our library as programs load it: a folder holding `libpvm3.so.3` (cargo builds
/// `target/<profile>/libpvm.so`).
fn our_lib_dir(scratch: &Path) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let lib = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps").join("libpvm.so");
    assert!(lib.exists(), "{} missing: cargo builds it with the tests", lib.display());
    let dir = scratch.join("lib");
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join("libpvm3.so.3"));
    std::os::unix::fs::symlink(&lib, dir.join("libpvm3.so.3")).unwrap();
    dir
}

fn compile(src: &Path, out: &Path, include: Option<&Path>, lib: &Path) {
    let mut cc = Command::new("cc");
    cc.args(["-std=gnu99", "-o"]).arg(out).arg(src);
    if let Some(inc) = include {
        cc.arg("-I").arg(inc);
    }
    cc.arg(lib);
    let r = cc.output().expect("cc");
    assert!(r.status.success(), "cc {}: {}", src.display(), String::from_utf8_lossy(&r.stderr));
}

fn run(prog: &Path, lib_dir: Option<&Path>, scratch: &Path) -> String {
    let mut c = Command::new(prog);
    // Debian's library refuses root without PVM_ALLOW_ROOT and looks for its daemon in PVM_TMP
    // (an empty folder: packing needs none).
    c.env("PVM_ALLOW_ROOT", "1").env("PVM_TMP", scratch);
    if let Some(d) = lib_dir {
        c.env("LD_LIBRARY_PATH", d);
    }
    let r = c.output().expect("run packs");
    assert!(r.status.success(), "{} failed: {}", prog.display(), String::from_utf8_lossy(&r.stderr));
    String::from_utf8(r.stdout).expect("utf-8 output")
}

#[test]
fn packed_bytes_and_values_match_debian_pvm() {
    let debian_lib = Path::new("/usr/lib/x86_64-linux-gnu/libpvm3.so.3");
    if !Path::new("/usr/include/pvm3.h").exists() || !debian_lib.exists() {
        eprintln!("SKIP packed_bytes_and_values_match_debian_pvm: Debian's pvm-dev is not installed");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("bb-pvm-xdr-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/packs.c");
    let ours_inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let lib_dir = our_lib_dir(&scratch);

    let with_debian_header = scratch.join("packs-debian-header");
    compile(&src, &with_debian_header, None, debian_lib);
    let with_our_header = scratch.join("packs-our-header");
    compile(&src, &with_our_header, Some(&ours_inc), &lib_dir.join("libpvm3.so.3"));

    let debian = run(&with_debian_header, None, &scratch);
    let ours = run(&with_debian_header, Some(&lib_dir), &scratch);
    let ours_built_here = run(&with_our_header, Some(&lib_dir), &scratch);
    std::fs::remove_dir_all(&scratch).unwrap();

    // The one deliberate difference: Debian's library reads an XDR `long` back zero-extended
    // (-7 comes back as 4294967289); ours returns what was packed.
    let expected = debian.replacen("| 5 4294967289 |", "| 5 -7 |", 1);
    assert!(expected != debian, "Debian's output changed: {debian}");
    assert!(debian.contains("xdr enc 0 len 196"), "Debian's run packed something else: {debian}");
    for (a, b) in expected.lines().zip(ours.lines()) {
        assert_eq!(b, a, "our library differs from Debian's");
    }
    assert_eq!(ours, expected);
    assert_eq!(ours_built_here, ours, "a program built against our pvm3.h behaves the same");
}
