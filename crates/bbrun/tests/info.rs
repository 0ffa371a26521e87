//! `--info`, `--version`, `--help`.

mod common;
use common::*;

#[test]
fn info_lists_every_tunable_with_value_and_origin() {
    let out = bbrun(&["--info"], None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let line = out.stdout.lines().find(|l| l.starts_with("BB_EAGER_INLINE ")).expect("BB_EAGER_INLINE listed");
    assert!(line.contains("default"), "{line}");
    for t in billboard::tunables::all() {
        assert!(out.stdout.contains(t.env), "{} missing", t.env);
    }
}

#[test]
fn info_reports_environment_overrides() {
    let out = std::process::Command::new(BBRUN).arg("--info").env("BB_EAGER_INLINE", "512").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("BB_EAGER_INLINE ")).unwrap();
    assert!(line.contains(" 512 ") && line.contains("environment"), "{line}");
}

#[test]
fn version_and_help() {
    let out = bbrun(&["--version"], None);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.starts_with("bbrun "), "{}", out.stdout);
    let out = bbrun(&["--help"], None);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("--tag-output") && out.stdout.contains("-n"), "{}", out.stdout);
}
