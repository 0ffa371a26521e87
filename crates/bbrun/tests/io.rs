//! Output forwarding (whole lines, optional rank tags) and stdin to rank 0.

mod common;
use common::*;

#[test]
fn tag_output_prefixes_every_line_with_the_rank() {
    let script = "echo out-$PMI_RANK; echo second-$PMI_RANK; echo err-$PMI_RANK >&2; printf tail-$PMI_RANK";
    let mut a = vec!["--tag-output".to_string()];
    a.extend(sh(3, script));
    let out = bbrun(&args(&a), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for r in 0..3 {
        for line in [format!("[{r}] out-{r}"), format!("[{r}] second-{r}"), format!("[{r}] tail-{r}")] {
            assert!(out.stdout.lines().any(|l| l == line), "{line:?} not in\n{}", out.stdout);
        }
        assert!(out.stderr.lines().any(|l| l == format!("[{r}] err-{r}")), "{}", out.stderr);
    }
    assert_eq!(out.stdout.lines().count(), 9, "{}", out.stdout);
}

/// Open MPI's `-x NAME=VALUE` and `-x NAME`, MPICH's `-genv`/`-env NAME VALUE`: every rank gets
/// the variable, the program's own `-x` stays its argument, and a name without a value here is
/// a usage error naming it.
#[test]
fn environment_options_give_every_rank_the_variables() {
    let script = "echo $PMI_RANK $ONE $TWO $THREE $HOME";
    let mut a: Vec<String> =
        ["-x", "ONE=1", "-x", "HOME", "-genv", "TWO", "2", "-env", "THREE", "-3"].map(String::from).into();
    a.extend(sh(2, script));
    a.extend(["-x".to_string(), "ignored".to_string()]);
    let out = bbrun_env(&args(&a), &[("HOME", "/home/here")], None, |_| {});
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0 1 2 -3 /home/here", "1 1 2 -3 /home/here"]);
    let out = bbrun(&["-x", "BB_SURELY_UNSET_VARIABLE", "true"], None);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("-x BB_SURELY_UNSET_VARIABLE: BB_SURELY_UNSET_VARIABLE is not set here"),
        "{}",
        out.stderr
    );
}

#[test]
fn untagged_output_is_passed_as_is() {
    let out = bbrun(&args(&sh(1, "echo a; printf b; echo c >&2")), None);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("a\nb", "c\n"));
}

#[test]
fn lines_of_different_ranks_never_mix() {
    let script = "i=0; while [ $i -lt 200 ]; do echo rank-$PMI_RANK-line-$i-xxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done";
    let out = bbrun(&args(&sh(4, script)), None);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 800);
    assert!(out.stdout.lines().all(|l| l.starts_with("rank-") && l.ends_with("xxxxxxxxxxxxxxxxxxxxxxxx")));
}

#[test]
fn stdin_reaches_rank_0_only() {
    let script =
        "n=0; while read line; do n=$((n+1)); last=$line; done; echo rank $PMI_RANK read $n lines, last [$last]";
    let input: String = (1..=1000).map(|i| format!("input {i}\n")).collect();
    let out = bbrun(&args(&sh(3, script)), Some(&input));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("rank 0 read 1000 lines, last [input 1000]"), "{}", out.stdout);
    assert!(out.stdout.contains("rank 1 read 0 lines, last []"), "{}", out.stdout);
    assert!(out.stdout.contains("rank 2 read 0 lines, last []"), "{}", out.stdout);
}

#[test]
fn rank_0_not_reading_stdin_does_not_stall_the_job() {
    let input = "x".repeat(1 << 20);
    let out = bbrun(&args(&sh(2, "echo done-$PMI_RANK")), Some(&input));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("done-0") && out.stdout.contains("done-1"));
}
