//! Message calls checked against Debian's PVM: receiving by the program's own matching
//! function (`pvm_recvf`, `tests/c/recvf.c`), and whole messages packed into others
//! (`pvm_pkmesg`, `pvm_pkmesgbody`, `pvm_upkmesg`, `tests/c/pkmesg.c`), and children's output
//! caught by the parent (`pvm_catchout`, `tests/c/catchout.c`), and a traced child's events
//! at its tracer (`PvmTraceTid`, `tests/c/trace.c`, `tests/c/trace_calls.c` for
//! `pvm_psend`, `pvm_precv`, `pvm_mcast`, `pvm_initsend`, and `tests/c/trace_buffers.c` for
//! the pack, unpack and buffer calls, `pvm_spawn` and `pvm_exit`, `tests/c/trace_modes.c`
//! for `PvmTraceCount`/`PvmTraceTime` summaries and `pvm_packf`/`pvm_unpackf` as one event;
//! the tracer's side in `tests/c/trace_show.h`), and `pvm_precv`'s length in bytes
//! (`tests/c/precv_len.c`), and received buffers kept, switched and freed while more
//! messages fill the ring behind one still held in its cell (`tests/c/kept_buffers.c`), and
//! the same for messages whose receive waited for them (`tests/c/waiting_held.c`).
//! Each C program prints
//! the same built against our library and against Debian's (run under a pvmd of its own),
//! under a timeout, leaving nothing behind.

mod common;

use common::*;

/// Runs `tests/c/<name>.c` on our library, checks what it printed, and compares with the same
/// source built against Debian's PVM where that is installed.
fn prints_as_under_debian(name: &str, expected: &str) {
    prints_as_under_debian_with(name, &[], expected)
}

/// As [`prints_as_under_debian`], with `env` set for our library's run.
fn prints_as_under_debian_with(name: &str, env: &[(&str, &str)], expected: &str) {
    let vm = Vm::new(name);
    let prog = build_c(&vm, name);
    let ours = run(vm.command(&prog).envs(env.iter().copied()), name);
    vm.assert_nothing_left();
    assert_eq!(ours, expected);
    let debian = Vm::new(&format!("{name}-debian"));
    if let Some(theirs) = build_c_debian(&debian, name).and_then(|p| under_debian(name, p.to_str().unwrap())) {
        assert_eq!(ours, theirs, "Debian's PVM printed otherwise");
    }
    let _ = std::fs::remove_dir_all(&debian.scratch);
}

#[test]
fn recvf_matchers_pick_and_rank_as_under_debian() {
    prints_as_under_debian(
        "recvf",
        "\
the default comes back as a function: 1
installing again returns the one before: 1
matcher saw tid 77 tag -99 (as given, unchecked)
highest rank: got tag 7 holding 70, 3 calls
equal ranks take the first: got tag 3 holding 30, 2 calls
the last one: got tag 5 holding 50, 1 calls
an empty queue asks nobody: nothing tag -1 holding -1, 0 calls
the receive buffer was freed first: 1
rank 1 ends the look: got tag 7 holding 70, 2 calls
an error ends the look: -7, 2 calls
a code PVM does not name: -99, probe -99
nrecv, none picked: nothing tag -1 holding -1, 2 calls
trecv, none picked: nothing tag -1 holding -1, 2 calls
probe, none picked: nothing tag -1 holding -1, 2 calls
probe by content: got tag 5 holding -1, 2 calls
probe again (still there): got tag 5 holding -1, 2 calls
recv by content (unpacked from its start): got tag 5 holding 50, 2 calls
precv asks the matcher: 0, tag 3 from self 1, 1 calls
null restores the default, returns the one before: 1
default: nothing in this context: nothing tag -1 holding -1, 0 calls
a matcher sees every context: got tag 4 holding 40, 1 calls
the default, called: 1 for its message, 0 for another tag, -16 for no buffer
the default installed again is the default: 1
default recv of tag 5: got tag 5 holding 50, 0 calls
default recv of any: got tag 3 holding 30, 0 calls
default recv of any: got tag 7 holding 70, 0 calls
recv waited for the message it picks: tag 21, after more than one look 1
the one it passed over: got tag 20 holding 200, 0 calls
",
    );
}

#[test]
fn whole_messages_of_every_type_pack_into_others_as_under_debian() {
    prints_as_under_debian(
        "pkmesg",
        "\
xdr in xdr: pkmesg 0, inner 156 bytes, outer 200 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 156 tag 77 ctx 5 src self 1
raw in raw: pkmesg 0, inner 158 bytes, outer 202 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 158 tag 77 ctx 5 src self 1
xdr in raw: pkmesg 0, inner 156 bytes, outer 200 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 156 tag 77 ctx 5 src self 1
pkmesg of the receive buffer: 0
  here is the message I received...: tag 41 from self 1 holding 99
pkmesgbody: 0, outer 8 bytes
  spliced: 4 5, then -5
pkmesgbody of xdr into raw: -3
pkmesg of the send buffer: -2
pkmesg of no such buffer: -16
pkmesg of a negative id: -2
pkmesg with no send buffer: -15
pkmesgbody with no send buffer: -15
upkmesg with no receive buffer: -15
",
    );
    // What Debian's library gets wrong (see tests/c/pkmesg.c), on ours alone: every type
    // unpacked from each inner message, in-place and raw inner messages, bad headers.
    let vm = Vm::new("pkmesg-ours");
    let prog = build_c(&vm, "pkmesg");
    let out = run(vm.command(&prog).arg("ours"), "pkmesg ours");
    vm.assert_nothing_left();
    assert_eq!(
        out,
        "\
xdr in xdr: pkmesg 0, inner 156 bytes, outer 200 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 156 tag 77 ctx 5 src self 1
  every type unpacked: 1, then -5
raw in raw: pkmesg 0, inner 158 bytes, outer 202 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 158 tag 77 ctx 5 src self 1
  every type unpacked: 1, then -5
xdr in raw: pkmesg 0, inner 156 bytes, outer 200 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 156 tag 77 ctx 5 src self 1
  every type unpacked: 1, then -5
inplace in raw: pkmesg 0, inner 158 bytes, outer 202 (header and length: 36)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 158 tag 77 ctx 5 src self 1
  every type unpacked: 1, then -5
raw in xdr: pkmesg 0, inner 158 bytes, outer 204 (header and length: 38)
  upkmesg: new buffer 1, receive buffer kept 1; around it 11 22; len 158 tag 77 ctx 5 src self 1
  every type unpacked: 1, then -5
pkmesg of the receive buffer: 0
  here is the message I received...: tag 41 from self 1 holding 99
pkmesgbody: 0, outer 8 bytes
  spliced: 4 5, then -5
pkmesgbody of xdr into raw: -3
pkmesg of the send buffer: -2
pkmesg of no such buffer: -16
pkmesg of a negative id: -2
pkmesg with no send buffer: -15
pkmesgbody with no send buffer: -15
upkmesg with no receive buffer: -15
upkmesg of an int (too short a header): -5
upkmesg of a send buffer: 1, then past the end -5
"
    );
}

#[test]
fn caught_output_is_printed_as_under_debian() {
    let vm = Vm::new("catchout");
    let prog = build_c(&vm, "catchout");
    let ours = run(&mut vm.command(&prog), "catchout");
    vm.assert_nothing_left();
    // Each task's lines in order (the children's and the parent's interleave as they come;
    // the plain lines of the child caught with PvmShowTids 0 are set apart by their text).
    let shape = |out: &str| {
        let mut m = by_source(out);
        let (plain, parent): (Vec<String>, Vec<String>) =
            m.remove("").unwrap_or_default().into_iter().partition(|l| l.starts_with("plain: "));
        m.insert(String::new(), parent);
        m.insert("plain".into(), plain);
        m
    };
    let tagged: &[&str] = &["BEGIN", "tagged out", "tagged err", "tagged last, no newline", "EOF"];
    let expected = sources(&[
        (
            "",
            &[
                "catchout 0, PvmShowTids 1",
                "spawned 2",
                "2 ended",
                "PvmShowTids was 1",
                "spawned 1",
                "1 ended",
                "spawned 1",
                "1 ended",
                "after exit",
            ],
        ),
        ("plain", &["plain: out", "plain: err", "plain: last, no newline"]),
        ("t40002", tagged),
        ("t40003", tagged),
    ]);
    assert_eq!(shape(&ours), expected, "{ours}");
    // Both BEGINs before pvm_spawn returns; every line of a child before its exit is
    // notified.
    assert!(ours.find("[t40003] BEGIN") < ours.find("spawned 2"), "{ours}");
    assert!(ours.find("[t40003] EOF") < ours.find("2 ended"), "{ours}");
    let debian = Vm::new("catchout-debian");
    if let Some(theirs) =
        build_c_debian(&debian, "catchout").and_then(|p| under_debian("catchout", p.to_str().unwrap()))
    {
        assert_eq!(shape(&ours), shape(&theirs), "Debian's PVM printed otherwise:\n{theirs}");
    }
    let _ = std::fs::remove_dir_all(&debian.scratch);
}

#[test]
fn a_tracer_receives_a_traced_childs_send_and_receive_events_as_under_debian() {
    prints_as_under_debian(
        "trace",
        "\
settmask 0
spawned 1
answer 7 0
answer 7 1
desc 57 entry trecv: 106/6=t 107/6=t 88/6=kid 78/6=parent 79/6=3 80/6=0 52/6=10 53/6=0
desc 57 exit trecv: 106/6=t 107/6=t 88/6=kid 47/6=buf 48/6=4 45/6=3 46/6=0 49/6=parent
desc 28 entry nrecv: 106/6=t 107/6=t 88/6=kid 78/6=parent 79/6=1 80/6=0
desc 28 exit nrecv: 106/6=t 107/6=t 88/6=kid 47/6=buf 48/6=4 45/6=1 46/6=0 49/6=parent
desc 45 entry recv: 106/6=t 107/6=t 88/6=kid 78/6=parent 79/6=4 80/6=0
desc 45 exit recv: 106/6=t 107/6=t 88/6=kid 47/6=buf 48/6=4 45/6=4 46/6=0 49/6=parent
desc 47 entry send: 106/6=t 107/6=t 88/6=kid 48/6=8 50/6=parent 45/6=2 46/6=0
desc 47 exit send: 106/6=t 107/6=t 88/6=kid 4/6=0
record 47 entry: 106=t 107=t 88=kid 48=8 50=parent 45=2 46=0
record 47 exit: 106=t 107=t 88=kid 4=0
",
    );
}

#[test]
fn a_tracer_receives_psend_precv_mcast_and_initsend_events_as_under_debian() {
    prints_as_under_debian(
        "trace_calls",
        "\
settmask 0
spawned 1
precv 0
precv 0
mcast got 1 2
mcast got 1 2
desc 85 entry psend: 106/6=t 107/6=t 88/6=kid 50/6=parent 45/6=5 46/6=0 71/8=addr 73/6=3 72/6=3
desc 85 exit psend: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 84 entry precv: 106/6=t 107/6=t 88/6=kid 78/6=parent 79/6=6 80/6=0 71/8=addr 73/6=4 72/6=3
desc 84 exit precv: 106/6=t 107/6=t 88/6=kid 4/6=0 48/6=16 45/6=6 46/6=0 49/6=parent
record 85 entry: 106=t 107=t 88=kid 50=parent 45=5 46=0 71=addr 73=2 72=3
record 85 exit: 106=t 107=t 88=kid 4=0
desc 17 entry initsend: 106/6=t 107/6=t 88/6=kid 57/6=0
desc 17 exit initsend: 106/6=t 107/6=t 88/6=kid 56/6=buf
desc 23 entry mcast: 106/6=t 107/6=t 88/6=kid 48/6=8 45/6=7 46/6=0 51/134=[1] parent
desc 23 exit mcast: 106/6=t 107/6=t 88/6=kid 4/6=0
record 17 entry: 106=t 107=t 88=kid 57=0
record 17 exit: 106=t 107=t 88=kid 56=buf
record 23 entry: 106=t 107=t 88=kid 48=8 45=7 46=0 51=[1] parent
record 23 exit: 106=t 107=t 88=kid 4=0
",
    );
}

#[test]
fn a_tracer_receives_pack_buffer_spawn_and_exit_events_as_under_debian() {
    prints_as_under_debian(
        "trace_buffers",
        "\
settmask 0
spawned 1
parent got 10 11 from the kid 2.5 xyz
desc 24 entry mkbuf: 106/6=t 107/6=t 88/6=kid 57/6=0
desc 24 exit mkbuf: 106/6=t 107/6=t 88/6=kid 47/6=buf
desc 51 entry setsbuf: 106/6=t 107/6=t 88/6=kid 47/6=buf
desc 51 exit setsbuf: 106/6=t 107/6=t 88/6=kid 56/6=0
desc 13 entry getsbuf: 106/6=t 107/6=t 88/6=kid
desc 13 exit getsbuf: 106/6=t 107/6=t 88/6=kid 56/6=buf
desc 36 entry pkint: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=2 74/6=1
desc 36 exit pkint: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 42 entry pkstr: 106/6=t 107/6=t 88/6=kid 71/8=addr
desc 42 exit pkstr: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 34 entry pkdouble: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=1 74/6=1
desc 34 exit pkdouble: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 31 entry pkbyte: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=3 74/6=1
desc 31 exit pkbyte: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 63 entry upkint: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=2 74/6=1
desc 63 exit upkint: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 69 entry upkstr: 106/6=t 107/6=t 88/6=kid 71/8=addr
desc 69 exit upkstr: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 61 entry upkdouble: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=1 74/6=1
desc 61 exit upkdouble: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 58 entry upkbyte: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=3 74/6=1
desc 58 exit upkbyte: 106/6=t 107/6=t 88/6=kid 4/6=0
record 63 entry: 106=t 107=t 88=kid 71=addr 73=1 74=1
record 63 exit: 106=t 107=t 88=kid 4=-5
desc 12 entry getrbuf: 106/6=t 107/6=t 88/6=kid
desc 12 exit getrbuf: 106/6=t 107/6=t 88/6=kid 55/6=buf
desc 50 entry setrbuf: 106/6=t 107/6=t 88/6=kid 47/6=0
desc 50 exit setrbuf: 106/6=t 107/6=t 88/6=kid 55/6=buf
desc 8 entry freebuf: 106/6=t 107/6=t 88/6=kid 47/6=buf
desc 8 exit freebuf: 106/6=t 107/6=t 88/6=kid 4/6=0
record 8 entry: 106=t 107=t 88=kid 47=buf
record 8 exit: 106=t 107=t 88=kid 4=-16
desc 52 entry spawn: 106/6=t 107/6=t 88/6=kid 82/12=\"bb-trace-no-such-program\" 84/12=\"\" 83/6=0 85/6=1
desc 52 exit spawn: 106/6=t 107/6=t 88/6=kid 4/6=0 86/134=[0]
desc 7 entry exit: 106/6=t 107/6=t 88/6=kid
",
    );
}

#[test]
fn counted_and_timed_tracing_send_one_summary_and_packf_is_one_event_as_under_debian() {
    prints_as_under_debian(
        "trace_modes",
        "\
counted
settmask 0
packf sent 8 from packf
desc 107 summary profiling: 106/6=t 107/6=t 88/6=kid 120/6=8 121/140=[8] \"exit\" \"initsend\" \"pkint\" \"recv\" \"send\" \"upkint\" \"packf\" \"unpackf\" 77/134=[8] 1 6 6 4 8 2 2 2
timed
settmask 0
packf sent 8 from packf
desc 106 summary timing: 106/6=t 107/6=t 88/6=kid 120/6=8 121/140=[8] \"exit\" \"initsend\" \"pkint\" \"recv\" \"send\" \"upkint\" \"packf\" \"unpackf\" 108/134=[8] t t t t t t t t 109/134=[8] t t t t t t t t 77/134=[8] 1 6 6 4 8 2 2 2
in full
settmask 0
packf sent 8 from packf
desc 17 entry initsend: 106/6=t 107/6=t 88/6=kid 57/6=0
desc 17 exit initsend: 106/6=t 107/6=t 88/6=kid 56/6=buf
desc 36 entry pkint: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=1 74/6=1
desc 36 exit pkint: 106/6=t 107/6=t 88/6=kid 4/6=0
record 17 entry: 106=t 107=t 88=kid 57=0
record 17 exit: 106=t 107=t 88=kid 56=buf
record 36 entry: 106=t 107=t 88=kid 71=addr 73=1 74=1
record 36 exit: 106=t 107=t 88=kid 4=0
record 17 entry: 106=t 107=t 88=kid 57=0
record 17 exit: 106=t 107=t 88=kid 56=buf
record 36 entry: 106=t 107=t 88=kid 71=addr 73=1 74=1
record 36 exit: 106=t 107=t 88=kid 4=0
desc 63 entry upkint: 106/6=t 107/6=t 88/6=kid 71/8=addr 73/6=1 74/6=1
desc 63 exit upkint: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 83 entry packf: 106/6=t 107/6=t 88/6=kid 76/12=\"%+%d%s\"
desc 83 exit packf: 106/6=t 107/6=t 88/6=kid 4/6=0
desc 89 entry unpackf: 106/6=t 107/6=t 88/6=kid 76/12=\"%d%s\"
desc 89 exit unpackf: 106/6=t 107/6=t 88/6=kid 4/6=0
an unknown trace option: -2
a known one: 1
",
    );
}

#[test]
fn precv_reports_the_message_length_in_bytes_as_under_debian() {
    prints_as_under_debian(
        "precv_len",
        "\
self: 3 ints: cc 0 rlen 12, 1 2 3
self: 5 bytes: cc 0 rlen 5, abcd
self: 2 doubles: cc 0 rlen 16, 1.5 2.5
self: 3 ints as doubles: cc 0 rlen 12
self: 2 doubles into 1: cc 0 rlen 16
other: 3 ints: cc 0 rlen 12, 1 2 3
other: 5 bytes: cc 0 rlen 5, abcd
other: 2 doubles: cc 0 rlen 16, 1.5 2.5
other: 3 ints as doubles: cc 0 rlen 12
other: 2 doubles into 1: cc 0 rlen 16
",
    );
}

#[test]
fn received_buffers_kept_switched_and_freed_while_the_ring_fills_behind_them_as_under_debian() {
    // A ring of 4 KiB: the 40 messages of 1000 bytes after the first fill it many times.
    prints_as_under_debian_with(
        "kept_buffers",
        &[("BB_PVM_RING_BYTES", "4096")],
        "\
first: 101
first, after the ring filled: first
setrbuf(0) returns the received buffer: 1
second: 202, another buffer: 1
back to the first (setrbuf returned the second: 1): 102
back to the second: second
half the rest, the first kept: 0 bad
bufinfo of the first: 0, 20 bytes, tag 1, from the child 1
the first again, at its end: -5
freed: 0, then bufinfo: -16
the other half: 0 bad
third: third
through a matcher: 0 bad
",
    );
}

#[test]
fn buffers_received_by_waiting_receives_kept_switched_and_freed_as_under_debian() {
    // A ring of 4 KiB: the 40 messages of 1000 bytes after the first fill it many times. A
    // receive spins (up to 2 s) until its message comes, never sleeping: every message the
    // parent waits for comes to the front of its ring while it spins (a sleeping receive
    // would take it in through the queue, copied, however the spin treats it).
    prints_as_under_debian_with(
        "waiting_held",
        &[("BB_PVM_RING_BYTES", "4096"), ("BB_PVM_SPIN_US", "2000000"), ("BB_PVM_SPIN_MAX_US", "2000000")],
        "\
first: 101
first, after the ring filled: first
setrbuf(0) returns the received buffer: 1
second: 202, another buffer: 1
back to the first (setrbuf returned the second: 1): 102
the rest, both kept (setrbuf returned the first: 1): 0 bad
bufinfo of the second: 0, 15 bytes, tag 2, from the child 1
back to the second, after 40 more: second
the first freed: 0, then bufinfo: -16
the third freed unread: 0, then bufinfo: -16, receive buffer 0
fourth: fourth
",
    );
}
