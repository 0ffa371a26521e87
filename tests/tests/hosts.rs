//! `bbrun` on several hosts: network namespaces stand in for hosts, and the launcher template
//! `ip netns exec {host}` starts bbrun's agent in each. Every job runs under a timeout and must
//! leave no process (rank or agent) and no /dev/shm file behind. The ranks are shell commands
//! or `bb-pmi-probe`: they use PMI only, not the engine's TCP route.
//!
//! Needs root and `ip`; each test prints a SKIP line and passes without them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bb_tests::{binary, processes_named, Job, Netns, Running};

const T: Duration = Duration::from_secs(30);
/// How long agents may take to clean up after bbrun has exited.
const SETTLE: Duration = Duration::from_secs(3);
/// What long-running ranks run: a sleep no other process on the machine runs.
const SLEEPER: &str = "sleep 29.25";
const LAUNCHER: &str = "ip netns exec {host}";
const SIGTERM: i32 = 15;

/// `name:slots,...` of the namespaces.
fn hosts(ns: &Netns, slots: &[usize]) -> String {
    let list: Vec<String> = ns.names.iter().zip(slots).map(|(n, s)| format!("{n}:{s}")).collect();
    list.join(",")
}

/// Runs `bbrun --launcher 'ip netns exec {host}' args...` to the end.
fn bbrun(args: &[&str], stdin: &[u8]) -> Job {
    let mut all = vec!["--launcher", LAUNCHER];
    all.extend_from_slice(args);
    start(&all, stdin).finish(T, SETTLE)
}

fn start(args: &[&str], stdin: &[u8]) -> Running {
    let probe = binary("bb-pmi-probe");
    Running::start(args, stdin, &[SLEEPER, &probe.to_string_lossy()])
}

/// A scratch folder for pid files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("bb-hosts-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    /// Waits until each of `n` ranks wrote `<rank>.<ext>`, and returns the contents in rank order.
    fn wait_for(&self, n: usize, ext: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let read = |r: usize| std::fs::read_to_string(self.0.join(format!("{r}.{ext}"))).ok();
            let got: Vec<Option<String>> = (0..n).map(read).collect();
            if got.iter().all(|g| g.as_ref().is_some_and(|s| s.ends_with('\n'))) {
                return got.into_iter().map(|g| g.unwrap().trim().to_owned()).collect();
            }
            assert!(Instant::now() < deadline, "the ranks did not all start: {got:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A rank that leaves a segment-like file for the job's clean-up to remove, writes its pid,
/// then sleeps until stopped.
fn sleeper_script(dir: &Path) -> String {
    let d = dir.display();
    format!("touch /dev/shm/bb-test-$BB_JOBID-$PMI_RANK; echo $$ > {d}/$PMI_RANK.pid; exec {SLEEPER}")
}

fn pids(s: &Scratch, n: usize) -> Vec<i32> {
    s.wait_for(n, "pid").iter().map(|p| p.parse().unwrap()).collect()
}

fn kill(pid: i32, sig: i32) {
    // SAFETY: plain kill(2).
    assert_eq!(unsafe { libc_kill(pid, sig) }, 0, "kill {pid}");
}

fn parent_of(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit(')').next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap()
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

const WHERE: &str = r#"echo "$PMI_RANK $(ip netns identify) $BB_HOST $BB_NODE_ID $BB_LOCAL_RANK $BB_LOCAL_SIZE""#;

/// Lines `rank netns host node local_rank local_size`, sorted by rank.
fn placement(job: &Job) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> =
        job.stdout().lines().map(|l| l.split_whitespace().map(str::to_owned).collect()).collect();
    rows.sort_by_key(|r| r[0].parse::<usize>().unwrap());
    rows
}

#[test]
fn ranks_fill_each_hosts_slots_then_wrap_around() {
    let Some(ns) = Netns::create(2) else { return };
    let (a, b) = (ns.names[0].as_str(), ns.names[1].as_str());
    let job = bbrun(&["--host", &hosts(&ns, &[2, 2]), "-n", "6", "sh", "-c", WHERE], b"");
    job.assert_success();
    let expect = [
        ["0", a, a, "0", "0", "4"],
        ["1", a, a, "0", "1", "4"],
        ["2", b, b, "1", "0", "2"],
        ["3", b, b, "1", "1", "2"],
        ["4", a, a, "0", "2", "4"],
        ["5", a, a, "0", "3", "4"],
    ];
    assert_eq!(placement(&job), expect, "stdout:\n{}", job.stdout());
}

#[test]
fn ppn_places_blocks_and_sets_the_rank_count() {
    let Some(ns) = Netns::create(2) else { return };
    let list = ns.names.join(",");
    let job = bbrun(&["--host", &list, "-ppn", "2", "sh", "-c", WHERE], b"");
    job.assert_success();
    let hosts: Vec<String> = placement(&job).iter().map(|r| r[1].clone()).collect();
    assert_eq!(hosts, [&ns.names[0], &ns.names[0], &ns.names[1], &ns.names[1]].map(String::as_str));
}

#[test]
fn hostfiles_in_open_mpi_and_mpich_formats() {
    let Some(ns) = Netns::create(2) else { return };
    let (a, b) = (ns.names[0].as_str(), ns.names[1].as_str());
    let s = Scratch::new("hostfile");
    let ompi = s.0.join("ompi");
    std::fs::write(&ompi, format!("# two hosts\n{a} slots=1 max_slots=2\n\n{b} slots=3\n")).unwrap();
    let job = bbrun(&["--hostfile", ompi.to_str().unwrap(), "sh", "-c", WHERE], b"");
    job.assert_success();
    let hosts: Vec<String> = placement(&job).iter().map(|r| r[1].clone()).collect();
    assert_eq!(hosts, [a, b, b, b]);
    let mpich = s.0.join("mpich");
    std::fs::write(&mpich, format!("{a}:2\n{b}   # one slot\n")).unwrap();
    let job = bbrun(&["-f", mpich.to_str().unwrap(), "-n", "4", "sh", "-c", WHERE], b"");
    job.assert_success();
    let hosts: Vec<String> = placement(&job).iter().map(|r| r[1].clone()).collect();
    assert_eq!(hosts, [a, a, b, a]);
}

#[test]
fn a_bad_hostfile_names_file_and_line() {
    let s = Scratch::new("badfile");
    let file = s.0.join("hosts");
    std::fs::write(&file, "node1:2\nnode2 slots=many\n").unwrap();
    let job = start(&["--hostfile", file.to_str().unwrap(), "true"], b"").finish(T, SETTLE);
    assert_eq!(job.code(), Some(2));
    let want = format!("hostfile {}, line 2: 'many' is not a slot count", file.display());
    assert!(job.stderr().contains(&want), "{}", job.stderr());
}

#[test]
fn pmi_spans_hosts_and_output_comes_back_tagged() {
    let Some(ns) = Netns::create(2) else { return };
    let probe = binary("bb-pmi-probe");
    let job = bbrun(&["--host", &hosts(&ns, &[2, 2]), "--tag-output", probe.to_str().unwrap()], b"");
    job.assert_success();
    let stdout = job.stdout();
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    let mut expect = Vec::new();
    for r in 0..4 {
        for j in 0..4 {
            expect.push(format!("[{r}] rank {r} of 4: probe-{j}=from-{j}"));
        }
    }
    assert_eq!(lines, expect);
}

#[test]
fn long_output_of_remote_ranks_arrives_whole_and_in_order() {
    let Some(ns) = Netns::create(2) else { return };
    let job = bbrun(&["--host", &hosts(&ns, &[1, 1]), "--tag-output", "seq", "1", "20000"], b"");
    job.assert_success();
    let stdout = job.stdout();
    assert!(stdout.lines().all(|l| l.starts_with("[0] ") || l.starts_with("[1] ")), "every line is whole and tagged");
    for r in 0..2 {
        let prefix = format!("[{r}] ");
        let numbers: Vec<usize> =
            stdout.lines().filter_map(|l| l.strip_prefix(&prefix)).map(|n| n.parse().unwrap()).collect();
        assert_eq!(numbers, (1..=20000).collect::<Vec<_>>(), "rank {r}'s lines, all and in order");
    }
}

#[test]
fn stdin_reaches_rank_0_on_a_remote_host() {
    let Some(ns) = Netns::create(2) else { return };
    let input: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).chain(*b"\n").collect();
    let script = r#"if [ "$PMI_RANK" = 0 ]; then exec cat; fi"#;
    let job = bbrun(&["--host", &hosts(&ns, &[1, 1]), "sh", "-c", script], &input);
    job.assert_success();
    assert_eq!(job.output.stdout.len(), input.len());
    assert!(job.output.stdout == input, "rank 0 got other bytes than bbrun's stdin");
}

#[test]
fn a_remote_ranks_exit_code_ends_the_job_naming_rank_and_host() {
    let Some(ns) = Netns::create(2) else { return };
    let script = format!(r#"[ "$PMI_RANK" = 3 ] && sleep 0.2 && exit 3; exec {SLEEPER}"#);
    let job = bbrun(&["--host", &hosts(&ns, &[2, 2]), "sh", "-c", &script], b"");
    assert_eq!(job.code(), Some(3), "{}", job.stderr());
    let report = job.stderr();
    let want = format!("on host {} exited with code 3", ns.names[1]);
    assert!(report.contains("rank 3 (pid ") && report.contains(&want), "{report}");
    assert!(job.elapsed < Duration::from_secs(5), "took {:?}", job.elapsed);
}

#[test]
fn kill_9_of_a_rank_on_the_second_host_ends_the_job() {
    let Some(ns) = Netns::create(2) else { return };
    let s = Scratch::new("kill9");
    let run = start(&["--launcher", LAUNCHER, "--host", &hosts(&ns, &[2, 2]), "sh", "-c", &sleeper_script(&s.0)], b"");
    let pids = pids(&s, 4);
    let killed = Instant::now();
    kill(pids[3], 9);
    let job = run.finish(T, SETTLE);
    let took = killed.elapsed();
    assert_eq!(job.code(), Some(137), "{}", job.stderr());
    let want = format!("rank 3 (pid {}) on host {} killed by signal 9 (SIGKILL)", pids[3], ns.names[1]);
    assert!(job.stderr().contains(&want), "the report should say {want:?}:\n{}", job.stderr());
    assert!(took < Duration::from_secs(2), "the job took {took:?} to end after the kill");
}

#[test]
fn killing_an_agent_ends_the_job_naming_its_host() {
    let Some(ns) = Netns::create(2) else { return };
    let s = Scratch::new("agent");
    let run = start(&["--launcher", LAUNCHER, "--host", &hosts(&ns, &[2, 2]), "sh", "-c", &sleeper_script(&s.0)], b"");
    let pids = pids(&s, 4);
    let agent = parent_of(pids[2]);
    assert!(processes_named(&bb_tests::agent_needle()).contains(&(agent as u32)), "rank 2's parent is an agent");
    let killed = Instant::now();
    kill(agent, 9);
    let job = run.finish(T, SETTLE);
    let took = killed.elapsed();
    assert_eq!(job.code(), Some(1), "{}", job.stderr());
    let want = format!("lost the agent on host {}: it was killed by signal 9 (SIGKILL) while ranks 2, 3", ns.names[1]);
    assert!(job.stderr().contains(&want), "the report should say {want:?}:\n{}", job.stderr());
    assert!(took < Duration::from_secs(2), "the job took {took:?} to end after the kill");
}

#[test]
fn when_bbrun_dies_the_agents_stop_their_ranks_and_clean_up() {
    let Some(ns) = Netns::create(2) else { return };
    let s = Scratch::new("orphan");
    let run = start(&["--launcher", LAUNCHER, "--host", &hosts(&ns, &[1, 2]), "sh", "-c", &sleeper_script(&s.0)], b"");
    pids(&s, 3);
    // Listed whole: shm_files() leaves out the files of a job still running, as this one is.
    let listed = std::fs::read_dir("/dev/shm").into_iter().flatten().flatten();
    assert_eq!(listed.filter(|e| e.file_name().to_string_lossy().starts_with("bb-test-")).count(), 3);
    run.signal(9);
    // finish() waits up to SETTLE for ranks, agents and the /dev/shm files to be gone.
    let job = run.finish(T, SETTLE);
    assert_eq!(job.code(), None, "bbrun was killed");
}

#[test]
fn an_unknown_host_is_a_clear_error() {
    let Some(ns) = Netns::create(1) else { return };
    let list = format!("{},bbt-no-such-host", ns.names[0]);
    let job = bbrun(&["--host", &list, SLEEPER.split(' ').next().unwrap(), "29.25"], b"");
    assert_eq!(job.code(), Some(1), "{}", job.stderr());
    let want = format!(
        "cannot start the agent on host bbt-no-such-host: `ip netns exec bbt-no-such-host {}",
        bb_tests::agent_needle()
    );
    assert!(job.stderr().contains(&want), "the report should say {want:?}:\n{}", job.stderr());
    assert!(job.elapsed < Duration::from_secs(3), "took {:?}", job.elapsed);
}

#[test]
fn a_launcher_that_cannot_run_is_a_clear_error() {
    let job = start(&["--launcher", "/no/such/launcher {host}", "--host", "far-away", "true"], b"").finish(T, SETTLE);
    assert_eq!(job.code(), Some(1), "{}", job.stderr());
    let want = "cannot start the agent on host far-away: `/no/such/launcher far-away ";
    assert!(job.stderr().contains(want) && job.stderr().contains("No such file"), "{}", job.stderr());
}

#[test]
fn a_launcher_that_prints_other_things_is_caught() {
    let job = start(&["--launcher", "echo {host}", "--host", "far-away", "true"], b"").finish(T, SETTLE);
    assert_eq!(job.code(), Some(1), "{}", job.stderr());
    let want = "the agent on host far-away (`echo far-away ";
    assert!(job.stderr().contains(want) && job.stderr().contains("login script"), "{}", job.stderr());
}

#[test]
fn a_host_that_never_answers_is_given_up_after_bb_agent_wait() {
    let s = Scratch::new("silent");
    let launcher = s.0.join("silent-launcher");
    std::fs::write(&launcher, format!("#!/bin/sh\nexec {SLEEPER}\n")).unwrap();
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let template = format!("{} {{host}}", launcher.display());
    let args = ["--launcher", &template, "--host", "far-away", "true"];
    let job = Running::start_env(&args, &[("BB_AGENT_WAIT", "1")], b"", &[SLEEPER]).finish(T, SETTLE);
    assert_eq!(job.code(), Some(1), "{}", job.stderr());
    let want = format!("the agent on host far-away did not answer within 1 s (`{} far-away ", launcher.display());
    assert!(job.stderr().contains(&want), "the report should say {want:?}:\n{}", job.stderr());
    assert!(job.elapsed < Duration::from_secs(3), "took {:?}", job.elapsed);
}

#[test]
fn a_program_missing_on_the_hosts_is_named_with_its_host() {
    let Some(ns) = Netns::create(2) else { return };
    let job = bbrun(&["--host", &hosts(&ns, &[1, 1]), "/no/such/program"], b"");
    assert_eq!(job.code(), Some(127), "{}", job.stderr());
    assert!(job.stderr().contains("on host bbt-"), "{}", job.stderr());
    assert!(job.stderr().contains("cannot run '/no/such/program'"), "{}", job.stderr());
}

#[test]
fn the_job_secret_reaches_every_rank_and_no_command_line() {
    let Some(ns) = Netns::create(2) else { return };
    let s = Scratch::new("secret");
    let d = s.path();
    // A job on this machine and two namespaces at once.
    let list = format!("localhost,{}", ns.names.join(","));
    let script = format!("echo $BB_JOB_SECRET > {d}/$PMI_RANK.secret; echo $BB_HOST > {d}/$PMI_RANK.host; echo $$ > {d}/$PMI_RANK.pid; exec {SLEEPER}");
    let run = start(&["--launcher", LAUNCHER, "--host", &list, "sh", "-c", &script], b"");
    pids(&s, 3);
    let secrets = s.wait_for(3, "secret");
    assert_eq!(s.wait_for(3, "host"), ["localhost", &ns.names[0], &ns.names[1]]);
    let secret = &secrets[0];
    assert!(secret.len() >= 32 && secret.chars().all(|c| c.is_ascii_hexdigit()), "secret {secret:?}");
    assert!(secrets.iter().all(|x| x == secret), "one secret per job: {secrets:?}");
    let shown = processes_named(secret);
    assert!(shown.is_empty(), "processes {shown:?} have the secret on their command line");
    // Signals reach ranks on every host; the job ends as a signalled one.
    run.signal(SIGTERM);
    let job = run.finish(T, SETTLE);
    assert_eq!(job.code(), Some(143), "{}", job.stderr());
    // The next job has its own secret, also on one host only.
    let job = start(&["-n", "1", "sh", "-c", "echo $BB_JOB_SECRET $BB_HOST $BB_NODE_ID"], b"").finish(T, SETTLE);
    job.assert_success();
    let out = job.stdout();
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{out}");
    assert_ne!(words[0], secret);
    assert_eq!(words[1..], ["localhost", "0"]);
}

#[test]
fn variables_given_with_x_and_genv_reach_ranks_on_every_host() {
    let Some(ns) = Netns::create(2) else { return };
    let list = format!("localhost,{}", ns.names.join(","));
    let script = "echo $PMI_RANK:$BB_HOST:$ONE:$TWO:$THREE";
    let args = [
        "--host",
        &list,
        "--tag-output",
        "-x",
        "ONE=1",
        "-genv",
        "TWO",
        "-2 two",
        "-env",
        "THREE",
        "",
        "sh",
        "-c",
        script,
    ];
    let job = bbrun(&args, b"");
    job.assert_success();
    let stdout = job.stdout();
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    let hosts = ["localhost", &ns.names[0], &ns.names[1]];
    let expect: Vec<String> = (0..3).map(|r| format!("[{r}] {r}:{}:1:-2 two:", hosts[r])).collect();
    assert_eq!(lines, expect);
}
