//! A virtual machine of two hosts: network namespaces stand in for hosts (as in the MPI
//! tests, `bb_tests::Netns`), the first agent starts the second through `BB_PVM_LAUNCHER='ip
//! netns exec {host}'`, and tasks of the two talk over TCP. Every program runs inside the
//! first namespace under a timeout; nothing may be left: no agent, no task, no folder of
//! either host, no namespace (dropped with the test).
//!
//! Needs root and `ip`; each test prints a SKIP line and passes without them.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bb_tests::Netns;
use common::*;

/// A command run inside namespace `ns` with our library, this VM's folder and the
/// namespace launcher.
fn in_ns(vm: &Vm, ns: &str, prog: &str) -> std::process::Command {
    let mut c = vm.command("ip");
    c.args(["netns", "exec", ns, prog]).env("BB_PVM_LAUNCHER", "ip netns exec {host}");
    c
}

/// As `Vm::assert_nothing_left`, and the added host's folder is gone too.
fn assert_nothing_left(vm: &Vm, second: &str) {
    let added = format!("{}.{second}", vm.dir().display());
    vm.assert_nothing_left();
    assert!(!std::path::Path::new(&added).exists(), "{added} left behind");
}

#[test]
fn tasks_on_two_hosts_spawn_talk_and_hear_of_a_deleted_host() {
    let Some(ns) = Netns::create(2) else { return };
    let vm = Vm::new("two_hosts");
    let prog = build_c(&vm, "two_hosts");
    let out = run(in_ns(&vm, &ns.names[0], prog.to_str().unwrap()).arg(&ns.names[1]), "two_hosts");
    assert_nothing_left(&vm, &ns.names[1]);
    let expected = format!(
        "notify of added hosts 0
added 1
notified of 1 added host 1, that one 1
host tid is a host's 1, not the first's 1
adding it again 1
hosts 2, second {} 1
notify 0
spawned 1
on the second host 1
1 bytes there and back 1
1000 bytes there and back 1
100000 bytes there and back 1
3000000 bytes there and back 1
child says its host is the second 1, in another network namespace 1
pvm_tasks lists the child on the second host 1
killed 0
notified of the killed child's exit 1
notify of the first child's exit 0
deleted 1
notified that the first child ended with its host 1
notified of the host's deletion 1
hosts 1
the child is gone 1
",
        ns.names[1]
    );
    assert_eq!(out, expected);
}

/// Debian's console, line-buffered, fed commands one at a time: each waits for what the
/// console prints before the next goes.
struct Console {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    seen: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Console {
    fn start(vm: &Vm, ns: &str) -> Console {
        let mut c = in_ns(vm, ns, "stdbuf");
        c.args(["-oL", "/usr/bin/pvm"]).env("PVM_ROOT", "/usr/lib/pvm3").stdin(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let seen = Arc::new(Mutex::new(String::new()));
        let s = seen.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buf) {
                s.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Console { child, stdin, seen, reader }
    }

    /// Sends `line`, then waits until the console has printed `until`.
    fn say(&mut self, line: &str, until: &str) {
        let from = self.seen.lock().unwrap().len();
        self.stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.seen.lock().unwrap()[from..].contains(until) {
            assert!(Instant::now() < deadline, "after {line:?}, no {until:?} in:\n{}", self.seen.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn halt(mut self) -> String {
        self.stdin.write_all(b"halt\n").unwrap();
        drop(self.stdin);
        finish(self.child, Duration::from_secs(30), "pvm console");
        self.reader.join().unwrap();
        let text = self.seen.lock().unwrap().clone();
        text
    }
}

#[test]
fn debians_examples_spread_over_two_hosts() {
    for p in ["pvm", "master1", "slave1", "spmd", "gexample"] {
        if !installed(p) {
            return;
        }
    }
    let Some(ns) = Netns::create(2) else { return };
    let (first, second) = (ns.names[0].as_str(), ns.names[1].as_str());
    let vm = Vm::new("examples_two_hosts");
    // The console keeps the machine of two hosts while the examples run.
    let mut console = Console::start(&vm, first);
    console.say(&format!("add {second}"), "1 successful");
    console.say("conf", "2 hosts, 1 data format");
    // spawn's default placement takes the hosts in turn: the ring's tids name both hosts
    // (0x40000 = 262144 the first, 0x80000 = 524288 the second).
    console.say("spawn -4 -> spmd", "[1] finished");

    // master1 spawns three slaves per host; each slave's result depends on how many there are.
    let master1 = run(&mut in_ns(&vm, first, "/usr/bin/master1"), "master1");
    assert!(master1.starts_with("Spawning 6 worker tasks ... SUCCESSFUL\n"), "{master1}");
    for who in 0..6 {
        let value = if who == 0 { 500 } else { 200 * who - 100 };
        let line = format!("I got {value}.000000 from {who}; (expecting {value}.000000)");
        assert!(master1.contains(&line), "missing {line:?} in\n{master1}");
    }

    let mut c = in_ns(&vm, first, "/usr/bin/gexample");
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(b"20\n4\n").unwrap();
    let gexample = String::from_utf8(finish(child, Duration::from_secs(60), "gexample").stdout).unwrap();
    for want in ["--> Using 4 processors <--", "The 1-Norm is 210", "The product of column 1 is 2.4329e+18"] {
        assert!(gexample.contains(want), "missing {want:?} in\n{gexample}");
    }

    console.say(&format!("delete {second}"), "deleted");
    console.say("conf", "1 host, 1 data format");
    let text = console.halt();
    assert_nothing_left(&vm, second);
    let ring = text.lines().find(|l| l.contains("262146 -> ")).unwrap_or_else(|| panic!("no ring in:\n{text}"));
    assert_eq!(ring, "[1:t40002] 262146 -> 524289 -> 262147 -> 524290 -> 262146 ", "{text}");
    assert!(text.contains("[1:t40002] token ring done"), "{text}");
}

/// The secret stays off the network: under strace, every byte any process of the machine
/// (tasks and agents of both hosts) writes to a TCP socket leaves it out, while the tasks
/// still talk across the hosts (the handshake proves it instead, `tcp.rs`).
#[test]
fn the_secret_never_goes_on_a_tcp_connection() {
    if !Path::new("/usr/bin/strace").exists() {
        println!("SKIP: strace is not installed");
        return;
    }
    let Some(ns) = Netns::create(2) else { return };
    let vm = Vm::new("secret_off_the_wire");
    let prog = build_c(&vm, "two_hosts");
    let log = vm.scratch.join("strace.log");
    let mut c = in_ns(&vm, &ns.names[0], "strace");
    c.args(["-f", "-yy", "-s", "512", "-e", "trace=write,writev,sendmsg,sendto", "-o"])
        .arg(&log)
        .arg(&prog)
        .arg(&ns.names[1]);
    let out = run(&mut c, "two_hosts under strace");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_nothing_left(&vm, &ns.names[1]);
    assert!(out.contains("3000000 bytes there and back 1"), "{out}");
    // The agent writes the secret into its folder: `write(4</.../vm/secret.tmp>, "<hex>", 32)`.
    let secret = text
        .lines()
        .find(|l| l.contains("secret.tmp>, \""))
        .and_then(|l| l.split("secret.tmp>, \"").nth(1))
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no write of the secret in the trace:\n{text}"));
    assert_eq!(secret.len(), 32, "{secret}");
    let tcp: Vec<&str> = text.lines().filter(|l| l.contains("<TCP:[")).collect();
    assert!(tcp.len() >= 4, "too few writes on TCP sockets in the trace:\n{text}");
    let leaks: Vec<&&str> = tcp.iter().filter(|l| l.contains(secret)).collect();
    assert!(leaks.is_empty(), "the secret {secret} went on TCP:\n{leaks:#?}");
}

/// An added host outlives the program that added it, as with pvmd: the first agent stays
/// while the machine has another host (not only while it has tasks), so a program started
/// after the agent's linger time still finds the host, spawns there and asks its clock.
#[test]
fn an_added_host_stays_after_its_adder_leaves() {
    let Some(ns) = Netns::create(2) else { return };
    let vm = Vm::new("added_host_stays");
    let prog = build_c(&vm, "added_host_stays");
    let prog = prog.to_str().unwrap();
    let added = run(in_ns(&vm, &ns.names[0], prog).args(["add", &ns.names[1]]), "added_host_stays add");
    assert_eq!(added, "added 1\n");
    // Five times the agent's linger (200 ms in `Vm::command`).
    std::thread::sleep(Duration::from_millis(1000));
    let used = run(in_ns(&vm, &ns.names[0], prog).args(["use", &ns.names[1]]), "added_host_stays use");
    assert_nothing_left(&vm, &ns.names[1]);
    assert_eq!(
        used,
        "hosts 2, the added one among them 1
its clock near ours 1
a host not in the machine 1
spawned there 1
the child finds the first host's clock near its own 1
deleted 1
"
    );
}
