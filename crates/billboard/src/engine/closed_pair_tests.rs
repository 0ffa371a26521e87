//! A receiver in another process closes its end of the billboard pair, or exits, while this
//! rank's send waits only for its FIN (a rendezvous the receiver never answers): the send
//! fails naming the receiver, found by the look a wait makes before it sleeps
//! (`Engine::look_for_closed`), instead of waiting for ever. The receiving end is this test
//! binary run again as a child process (`receiver_end`) on the same segment.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use super::*;
use crate::transport::routes::shm_only;
use crate::transport::shm::{segment_name, Layout, Segment, ShmChannel};

/// The child's segment name and what it does after the RTS ("close" or "exit").
const SEGMENT: &str = "BB_TEST_PAIR_SEGMENT";
const MODE: &str = "BB_TEST_PAIR_MODE";
/// Past the eager limit: a rendezvous whose send waits for the receiver's FIN.
const LEN: usize = 1 << 20;
/// Longer than any wait here should take: a send still waiting then hangs.
const LIMIT: Duration = Duration::from_secs(20);

fn layout() -> Layout {
    Layout::new(2, 32 << 10, 64 << 10, 4)
}

/// The receiving end (rank 1) when run as the child of [`send_to_a_receiver_that`]; nothing in
/// an ordinary run. It reads rank 0's first record (the RTS), answers nothing, and then closes
/// the pair as an engine that failed rank 0 does (`Channel::close`) and lives on, or exits.
#[test]
fn receiver_end() {
    let (Ok(name), Ok(mode)) = (std::env::var(SEGMENT), std::env::var(MODE)) else { return };
    let mut chan = ShmChannel::new(Segment::open(&name, layout()).expect("map the segment"), 1, false);
    let start = Instant::now();
    let mut got = false;
    while !got {
        assert!(start.elapsed() < LIMIT, "no record from rank 0");
        chan.poll(Some(0), |_, _, _| got = true);
    }
    if mode == "close" {
        chan.close(0, "the test closes the pair");
        std::thread::sleep(LIMIT);
    }
    std::process::exit(0);
}

/// Rank 0's send of [`LEN`] bytes to a child rank 1 that does `mode`; what the send ended with.
/// Panics if it is still waiting after [`LIMIT`].
fn send_to_a_receiver_that(mode: &str) -> Result<Completion> {
    let name = segment_name(&format!("pair-{}-{mode}", std::process::id()));
    let mut chan = ShmChannel::new(Segment::create(&name, layout(), false).expect("create the segment"), 0, false);
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "engine::progress::closed_pair_tests::receiver_end", "--test-threads=1"])
        .env(SEGMENT, &name)
        .env(MODE, mode)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the receiver");
    let start = Instant::now();
    let stop = |child: &mut Child, what: &str| -> ! {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} after {:?}", start.elapsed());
    };
    while !chan.note_alive() {
        if start.elapsed() > LIMIT {
            chan.unlink();
            stop(&mut child, "the receiver never mapped the segment");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    chan.unlink();
    let mut engine = Engine::new(shm_only(chan));
    let msg = vec![7u8; LEN];
    // SAFETY: `msg` outlives the request, which ends (or the test panics) below.
    let id = unsafe { engine.isend(1, 0, 0, 0, msg.as_ptr(), LEN, false) }.expect("a rendezvous");
    while !engine.is_done(id) {
        // As the wait does: a round, and the look before a sleep when it found nothing.
        if !engine.progress(Some(1)) && !engine.look_for_closed() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Reaped as its launcher would: a zombie still counts as a process.
        let _ = child.try_wait();
        if start.elapsed() > LIMIT {
            stop(&mut child, "the send still waits for a FIN that cannot come");
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    engine.finish(id)
}

#[test]
fn a_send_fails_when_its_receiver_in_another_process_closes_the_pair() {
    match send_to_a_receiver_that("close") {
        Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains("closed its end"), "{reason}"),
        other => panic!("expected rank 1 failed, got {other:?}"),
    }
}

#[test]
fn a_send_fails_when_its_receiver_process_exits() {
    match send_to_a_receiver_that("exit") {
        Err(Error::PeerGone { rank: 1, reason }) => assert!(reason.contains("process is gone"), "{reason}"),
        other => panic!("expected rank 1 failed, got {other:?}"),
    }
}
