//! Debian's PVM programs run unchanged on our library (`pvm-examples`' hello, master1/slave1,
//! spmd, and NetPIPE's NPpvm), with the output they print under Debian's own PVM, and the
//! task calls' results and error codes (`tests/c/tasks.c`). Every run is under a timeout and
//! must leave nothing behind: no agent, no task, no file of the agent's folder.
//!
//! Each test has its own agent folder (`BB_PVM_DIR`), so they run side by side.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn hello_prints_what_it_prints_under_debian() {
    if !installed("hello.pvm") || !installed("hello_other") {
        return;
    }
    let vm = Vm::new("hello");
    let ours = run(&mut vm.command("/usr/bin/hello.pvm"), "hello");
    vm.assert_nothing_left();
    assert_eq!(ours, format!("i'm t40001\nfrom t40002: hello, world from {}\n", hostname()));
    if let Some(debian) = under_debian("hello", "hello.pvm") {
        assert_eq!(ours, debian, "Debian's PVM printed otherwise");
    }
}

/// master1's lines come in the order its slaves finish: compared as sets.
fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(String::from).collect();
    v.sort();
    v
}

#[test]
fn master1_and_its_slaves_print_what_they_print_under_debian() {
    if !installed("master1") || !installed("slave1") {
        return;
    }
    let vm = Vm::new("master1");
    let ours = run(&mut vm.command("/usr/bin/master1"), "master1");
    vm.assert_nothing_left();
    assert!(ours.starts_with("Spawning 3 worker tasks ... SUCCESSFUL\n"), "{ours}");
    for (who, value) in [(0, 200), (1, 100), (2, 300)] {
        let line = format!("I got {value}.000000 from {who}; (expecting {value}.000000)");
        assert!(ours.contains(&line), "missing {line:?} in\n{ours}");
    }
    if let Some(debian) = under_debian("master1", "master1") {
        assert_eq!(sorted_lines(&ours), sorted_lines(&debian), "Debian's PVM printed otherwise");
    }
}

#[test]
fn spmd_passes_its_token_as_under_debian() {
    if !installed("spmd") {
        return;
    }
    let vm = Vm::new("spmd");
    let ours = run(&mut vm.command("/usr/bin/spmd"), "spmd");
    vm.assert_nothing_left();
    assert_eq!(ours, "Pass a token through the   1 tid ring:\n262145 -> 262145 \ntoken ring done\n");
    if let Some(debian) = under_debian("spmd", "spmd") {
        assert_eq!(mask_tids(&ours), mask_tids(&debian), "Debian's PVM printed otherwise");
    }
}

#[test]
fn gexample_reduces_over_a_group_as_under_debian() {
    if !installed("gexample") {
        return;
    }
    let vm = Vm::new("gexample");
    // From a shell, gexample asks for the matrix dimension and the number of tasks, then
    // spawns the others; they join a group, freeze it, reduce twice and meet in a barrier.
    let mut c = vm.command("/usr/bin/gexample");
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"20\n4\n").unwrap();
    }
    let out = finish(child, Duration::from_secs(60), "gexample");
    let ours = String::from_utf8(out.stdout).unwrap();
    vm.assert_nothing_left();
    assert!(ours.contains("--> Using 4 processors <--"), "{ours}");
    assert!(ours.contains("The 1-Norm is 210"), "{ours}");
    assert!(ours.contains("The product of column 1 is 2.4329e+18"), "{ours}");
    if let Some(debian) = under_debian_with_input("gexample", "gexample", "20\n4\n") {
        assert_eq!(ours, debian, "Debian's PVM printed otherwise");
    }
}

/// Numbers that look like tids (above 1000) as one word: Debian's pvmd gives tasks started
/// from a shell later tids than ours (its own helper tasks take the first ones).
fn mask_tids(s: &str) -> String {
    s.split_whitespace()
        .map(|w| if w.parse::<i64>().is_ok_and(|n| n > 1000) { "TID" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_fortran_examples_print_what_they_print_under_debian() {
    // fmaster1's lines come in the order its slaves finish: compared sorted.
    for (prog, sorted) in [("fmaster1", true), ("fspmd", false), ("fgexample", false)] {
        if !installed(prog) {
            continue;
        }
        let vm = Vm::new(prog);
        let ours = run(&mut vm.command(Path::new("/usr/bin").join(prog)), prog);
        vm.assert_nothing_left();
        assert!(ours.lines().count() >= 3, "{prog} printed little:\n{ours}");
        if let Some(debian) = under_debian(prog, prog) {
            let shape = |s: &str| {
                let mut lines: Vec<String> = s.lines().map(mask_tids).collect();
                if sorted {
                    lines.sort();
                }
                lines
            };
            assert_eq!(shape(&ours), shape(&debian), "{prog}: Debian's PVM printed otherwise");
        }
    }
}

#[test]
fn four_spmd_siblings_pass_their_token_around() {
    if !installed("spmd") {
        return;
    }
    let vm = Vm::new("spmd4");
    let prog = build_c(&vm, "spawn_spmd");
    let out = run(&mut vm.command(&prog), "spawn_spmd");
    vm.assert_nothing_left();
    // The first sibling (t40002) prints the ring of tids, the others nothing; its lines may
    // come before the parent's own (caught output prints in whichever call it arrives), but
    // every BEGIN comes before pvm_spawn returns.
    let expected = sources(&[
        ("", &["spawned 4"]),
        (
            "t40002",
            &[
                "BEGIN",
                "Pass a token through the   4 tid ring:",
                "262146 -> 262147 -> 262148 -> 262149 -> 262146 ",
                "token ring done",
                "EOF",
            ],
        ),
        ("t40003", &["BEGIN", "EOF"]),
        ("t40004", &["BEGIN", "EOF"]),
        ("t40005", &["BEGIN", "EOF"]),
    ]);
    assert_eq!(by_source(&out), expected, "{out}");
    assert!(out.find("[t40005] BEGIN") < out.find("spawned 4"), "{out}");
}

#[test]
fn groups_of_1_to_8_members_reduce_right() {
    if !installed("gexample") {
        return;
    }
    for n in 1..=8 {
        let vm = Vm::new(&format!("group{n}"));
        let mut c = vm.command("/usr/bin/gexample");
        c.stdin(Stdio::piped());
        let mut child = c.spawn().unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(format!("20\n{n}\n").as_bytes()).unwrap();
        }
        let out = String::from_utf8(finish(child, Duration::from_secs(60), "gexample").stdout).unwrap();
        vm.assert_nothing_left();
        assert!(out.contains(&format!("--> Using {n} processors <--")), "{n} members:\n{out}");
        assert!(out.contains("The 1-Norm is 210"), "{n} members:\n{out}");
        assert!(out.contains("The product of column 1 is 2.4329e+18"), "{n} members:\n{out}");
    }
}

#[test]
fn exported_variables_reach_spawned_tasks() {
    let vm = Vm::new("export");
    let prog = build_c(&vm, "export");
    let out = run(&mut vm.command(&prog), "export");
    vm.assert_nothing_left();
    // The second printenv finds nothing and prints nothing.
    let expected =
        sources(&[("", &["exit"]), ("t40002", &["BEGIN", "exported value", "EOF"]), ("t40003", &["BEGIN", "EOF"])]);
    assert_eq!(by_source(&out), expected, "{out}");
}

#[test]
fn message_handlers_take_their_messages_while_the_task_waits() {
    let vm = Vm::new("handlers");
    let prog = build_c(&vm, "handlers");
    let out = run(&mut vm.command(&prog), "handlers");
    vm.assert_nothing_left();
    let expected = "\
addmhf 1
handler got 7 (tag 50, active buffer 1)
received 8 after 1 handler call
delmhf 0, again -32
received 9, handler calls 1
";
    assert_eq!(out, expected);
}

#[test]
fn debians_console_configures_spawns_lists_and_halts() {
    if !installed("pvm") || !installed("spmd") {
        return;
    }
    let vm = Vm::new("console");
    let mut c = vm.command("/usr/bin/pvm");
    c.env("PVM_ROOT", "/usr/lib/pvm3").stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"conf\nspawn -3 spmd\nps -a\nhalt\n").unwrap();
    }
    let out = finish(child, Duration::from_secs(60), "pvm console");
    let text = String::from_utf8(out.stdout).unwrap();
    vm.assert_nothing_left();
    for want in [
        "1 host, 1 data format",
        &format!("{:>24}    40000  LINUX64    1000", hostname()),
        "3 successful\nt40002\nt40003\nt40004\n",
        "HOST      TID   FLAG 0x COMMAND",
    ] {
        assert!(text.contains(want), "the console did not print {want:?}:\n{text}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `spawn -> prog` in Debian's console: the console sets `PvmOutputTid`/`PvmOutputCode`, and the
/// children's output (grandchildren's too, who inherit them) comes back as pvmd's output
/// messages, which the console prints per job.
#[test]
fn debians_console_prints_the_output_of_what_it_spawns() {
    if !installed("pvm") || !installed("hello.pvm") || !installed("hello_other") {
        return;
    }
    let vm = Vm::new("console_output");
    // Line-buffered, so that the job's end shows before the console exits.
    let mut c = vm.command("stdbuf");
    c.args(["-oL", "/usr/bin/pvm"]).env("PVM_ROOT", "/usr/lib/pvm3").stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                seen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    use std::io::Write;
    stdin.write_all(b"spawn -> hello.pvm\n").unwrap();
    // The job's end is printed once every task's output ended.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.lock().unwrap().contains("[1] finished") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    stdin.write_all(b"halt\n").unwrap();
    drop(stdin);
    let out = finish(child, Duration::from_secs(30), "pvm console");
    reader.join().unwrap();
    let text = seen.lock().unwrap().clone();
    vm.assert_nothing_left();
    for want in
        ["[1:t40002] i'm t40002\n", "[1:t40002] from t40003: hello, world from ", "[1:t40002] EOF\n", "[1] finished"]
    {
        assert!(text.contains(want), "the console did not print {want:?}:\n{text}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn timing_and_the_bandwidth_tests_run_to_their_end() {
    if !installed("timing") || !installed("timing_slave") {
        return;
    }
    let vm = Vm::new("timing");
    let out = run(&mut vm.command("/usr/bin/timing"), "timing");
    assert!(out.trim_end().ends_with("done"), "{out}");
    assert!(out.contains("slave is task t40002"), "{out}");
    vm.assert_nothing_left();
    // Two copies started from a shell find each other through a group (pvm_gettid); the
    // second is the slave that checks the data.
    for prog in ["pbwtest", "rbwtest", "ibwtest", "dbwtest"] {
        if !installed(prog) {
            continue;
        }
        let vm = Vm::new(prog);
        let first = vm.command(Path::new("/usr/bin").join(prog)).spawn().unwrap();
        let second = vm.command(Path::new("/usr/bin").join(prog)).spawn().unwrap();
        let a = String::from_utf8(finish(first, Duration::from_secs(120), prog).stdout).unwrap();
        let b = String::from_utf8(finish(second, Duration::from_secs(120), prog).stdout).unwrap();
        vm.assert_nothing_left();
        let both = format!("{a}{b}");
        assert!(both.contains("Data size: 800000"), "{prog}:\n{both}");
        assert!(both.contains("received correctly"), "{prog}:\n{both}");
    }
}

#[test]
fn netpipe_runs_between_two_tasks_started_from_a_shell() {
    if !installed("NPpvm") {
        return;
    }
    let vm = Vm::new("netpipe");
    // A fixed count of round trips a trial (`-n`): NetPIPE otherwise sizes each trial from the
    // fastest of the last size's 7 trials (0.25 s / that time), and on a loaded machine a round
    // trip costs either ~1 us (both tasks on a core) or ~1 ms (one waiting for the other's
    // turn): one lucky trial makes the next size's trials 1000 times too long (> 150 s at load
    // 20). 20 round trips x 7 trials x 58 sizes stays under 20 s even at 1 ms each, and every
    // size from 1 to 4099 bytes still goes both ways.
    let repeats = ["-n", "20"];
    let receiver =
        vm.command("/usr/bin/NPpvm").args(repeats).args(["-u", "4096", "-o", "np-receiver.out"]).spawn().unwrap();
    // The transmitter expects to find the receiver enrolled (pvm_tasks must list two tasks).
    let start = Instant::now();
    while !vm.dir().join("t40001").exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "the receiver did not enroll");
        std::thread::sleep(Duration::from_millis(10));
    }
    let transmitter = vm
        .command("/usr/bin/NPpvm")
        .args(repeats)
        .args(["-h", "localhost", "-u", "4096", "-o", "np.out"])
        .spawn()
        .unwrap();
    // A transmitter past the limit leaves its receiver waiting for ever: that one is ended too.
    let mut receiver = receiver;
    let t = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        finish(transmitter, Duration::from_secs(150), "NPpvm transmitter")
    }))
    .unwrap_or_else(|p| {
        let _ = receiver.kill();
        let _ = receiver.wait();
        std::panic::resume_unwind(p)
    });
    let r = finish(receiver, Duration::from_secs(60), "NPpvm receiver");
    assert!(t.status.success() && r.status.success(), "NPpvm failed: {}", String::from_utf8_lossy(&t.stderr));
    let table = std::fs::read_to_string(vm.scratch.join("np.out")).unwrap();
    let sizes: Vec<u64> = table.lines().filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect();
    assert_eq!(sizes.first(), Some(&1), "{table}");
    assert!(sizes.contains(&4096), "NPpvm did not reach 4096 bytes:\n{table}");
    assert_eq!(sizes.len(), 58, "NPpvm skipped sizes:\n{table}");
    vm.assert_nothing_left();
}

#[test]
fn a_task_killed_with_sigkill_is_notified_and_halt_ends_everything() {
    if !installed("slave1") {
        return;
    }
    let vm = Vm::new("halt");
    let prog = build_c(&vm, "halt");
    let out = run(&mut vm.command(&prog), "halt");
    vm.assert_nothing_left();
    assert_eq!(out, "spawned 2\nkill -9 0\nnotified of the killed slave: 1\nhalt 0\n");
}

#[test]
fn crossing_large_sends_get_through_on_rings_and_on_sockets() {
    for shm in ["1", "0"] {
        let vm = Vm::new(&format!("crossing{shm}"));
        let prog = build_c(&vm, "crossing");
        let out = run(vm.command(&prog).arg0(&prog).env("BB_PVM_SHM", shm), "crossing");
        vm.assert_nothing_left();
        assert_eq!(out, "crossing sends: 0 bad\n", "BB_PVM_SHM={shm}");
    }
}

#[test]
fn large_messages_by_single_copy_arrive_as_sent_to_every_receiver() {
    // BB_PVM_SINGLE_COPY=0: the same program through the rings, and on sockets.
    for (single, shm) in [("65536", "1"), ("0", "1"), ("65536", "0")] {
        let vm = Vm::new(&format!("single-copy{single}-{shm}"));
        let prog = build_c(&vm, "single_copy");
        let out =
            run(vm.command(&prog).arg0(&prog).env("BB_PVM_SINGLE_COPY", single).env("BB_PVM_SHM", shm), "single_copy");
        vm.assert_nothing_left();
        assert_eq!(out, "single copy: 0 bad\n", "BB_PVM_SINGLE_COPY={single} BB_PVM_SHM={shm}");
    }
}

#[test]
fn master1_runs_with_every_message_on_sockets() {
    if !installed("master1") || !installed("slave1") {
        return;
    }
    let vm = Vm::new("master1-sockets");
    let ours = run(vm.command("/usr/bin/master1").env("BB_PVM_SHM", "0"), "master1");
    vm.assert_nothing_left();
    assert_eq!(ours.lines().count(), 4, "{ours}");
    assert!(ours.contains("I got 300.000000 from 2; (expecting 300.000000)"), "{ours}");
}

#[test]
fn task_calls_return_pvms_results_and_error_codes() {
    let vm = Vm::new("tasks");
    let prog = build_c(&vm, "tasks");
    let out = run(&mut vm.command(&prog), "tasks");
    vm.assert_nothing_left();
    let expected = "\
enrolled: 1
parent: -23
send to a negative tid: -2
send to no task: -31
negative tag: -2
free of no buffer: -16
setrbuf of no buffer: -16
bufinfo of a negative id: -2
bad encoding: -2
kill of no task: -31
recv with a bad tid: -2
nrecv of nothing: 0
trecv timed out: 0
probe of nothing: 0
probe sees 4 bytes tag 9 from self 1
received 41, buffer is the receive buffer 1
precv 0: 1.5 2.5 3.5 len 24 tag 11 self 1
mcast skips the sender: 0
config: 1 host, arch LINUX64, host tid 40000
spawn of nothing: 0 (-7)
spawn on no host: 0 (-6)
spawn sleep: 1
tasks: 2, the sleeper's parent is me 1
notify: 0
kill: 0
notified that the sleeper ended: 1
pstat of it now: -31
notify on a task already gone comes at once: 1
putinfo index: 0
second putinfo index: 1
a locked class refuses another entry: -33
recvinfo: stored
recvinfo of nothing: -32
getmboxinfo: 1 class svc with 2 entries owned by me 1
delinfo: 0
delinfo again: -32
spawn echo: 1
after exit
";
    // The caught lines are printed in whichever call of the parent they arrive during (the
    // spawn's own, or the wait in pvm_exit), always before pvm_exit returns.
    let caught: Vec<&str> = out.lines().filter(|l| l.starts_with("[t40003] ")).collect();
    assert_eq!(caught, ["[t40003] BEGIN", "[t40003] caught line", "[t40003] EOF"], "{out}");
    let at = out.find("[t40003] EOF").unwrap();
    assert!(at < out.find("after exit").unwrap(), "caught output after pvm_exit returned:\n{out}");
    let rest: String = out.lines().filter(|l| !l.starts_with("[t40003] ")).map(|l| format!("{l}\n")).collect();
    assert_eq!(rest, expected);
}
