//! Unit tests of `board.rs`: slot offers and settling, releases, the blocking flag.

use super::*;

#[test]
fn a_line_is_rewritten_only_after_every_reader_finished_its_last_use() {
    let first = 100;
    for (len, depth) in [(0, HEADERS), (INLINE, HEADERS), (INLINE + 1, DATA_DEPTH), (DATA, DATA_DEPTH)] {
        assert!((first..first + depth).all(|e| may_post(e, len, first, 0)), "{len} B: the first lines are fresh");
        let e = first + depth;
        assert!(!may_post(e, len, first, first - 1), "{len} B: a reader still on epoch {first}'s line");
        assert!(may_post(e, len, first, first));
        assert!(!may_post(e + 1, len, first, first) && may_post(e + 1, len, first, first + 1));
    }
    // A small post reuses its header line, a large one its data area too.
    assert_eq!(first % HEADERS, (first + HEADERS) % HEADERS);
    assert_eq!(first % DATA_DEPTH, (first + DATA_DEPTH) % DATA_DEPTH);
}

#[test]
fn a_new_communicator_starts_above_every_stale_line() {
    // Two members used the slot up to epochs 57 and 40: the new first epoch passes both,
    // so no stale stamp (<= 57) reads as posted, whichever buffer it lies in.
    let clocks = [57, 40];
    let first = first_epoch(clocks.into_iter().max().unwrap());
    assert!(first > 57 && first + 1 > 57);
}

#[test]
fn agreed_slots_are_taken_and_come_back_once_drained() {
    let (a, b) = (BoardPool::default(), BoardPool::default());
    a.lock().free = 0b0110;
    let ((wa, oa), (wb, ob)) = (a.offer(), b.offer());
    assert!(oa && ob);
    assert_eq!(a.settle(oa, wa[0] & wb[0]), Some(1));
    assert_eq!(b.settle(ob, wa[0] & wb[0]), Some(1));
    assert_eq!(a.lock().free, 0b0100);
    // A concurrent agreement in one process gets nothing while the mask is lent.
    let (w1, o1) = a.offer();
    let (w2, o2) = a.offer();
    assert!(o1 && !o2 && w2[0] == 0);
    assert_eq!(a.settle(o2, w2[0]), None);
    assert_eq!(a.settle(o1, w1[0]), Some(2));
    // Freed at epoch 9 with one reader at 8: not offered until it reads 9.
    let mark = AtomicU64::new(8);
    a.release(1, 9, vec![(&mark as *const _, 9)]);
    assert_eq!(a.offer().0, [0, 9], "draining slot 1 is not offered; the clock passed 9");
    a.settle(true, 0);
    mark.store(9, Ordering::Release);
    assert_eq!(a.offer().0[0], 0b0010);
}

#[test]
fn a_revoked_communicators_slot_comes_back_though_a_member_gave_up() {
    // Two members of a communicator with first epoch 10; each process's view of it.
    let marks = [AtomicU64::new(11), AtomicU64::new(10)];
    let lines: Vec<*mut u8> = marks.iter().map(|m| m as *const AtomicU64 as *mut u8).collect();
    let board = |me: usize, next: u64| Board {
        slot: 3,
        me,
        lines: lines.clone(),
        first: 10,
        next: AtomicU64::new(next),
        lowest: AtomicU64::new(0),
        crowded: false,
        nonblocking: None,
        nonblocking_from: 0,
        unended: Mutex::default(),
    };
    // Member 0 posted epoch 12 and read up to 11; member 1 gave up in epoch 11 (read 10).
    let (p0, p1) = (BoardPool::default(), BoardPool::default());
    p0.lock().free = 0;
    p1.lock().free = 0;
    board(0, 13).release(&p0, true);
    assert_eq!(marks[0].load(Ordering::Relaxed), 12 + HEADERS, "member 0 reads nothing more there");
    assert_eq!(p0.offer().0, [0, 12 + HEADERS], "draining: member 1 has not freed it yet");
    p0.settle(true, 0);
    board(1, 12).release(&p1, true);
    assert_eq!(p0.offer().0[0], 1 << 3, "member 1 freed it too: the slot is back");
    assert_eq!(p1.offer().0, [1 << 3, 11 + HEADERS], "and a later communicator starts above both marks");
}

#[test]
fn a_slot_comes_back_once_both_lanes_are_read_and_the_clock_passes_both() {
    // One member; the blocking lane's mark (epochs 10..=14 used) and the nonblocking lane's
    // (10..=11 used, 11 still unread).
    let marks = [AtomicU64::new(14), AtomicU64::new(10)];
    let lane = |k: usize, next: u64, nonblocking: Option<Arc<Board>>| Board {
        slot: 2,
        me: 0,
        lines: vec![&marks[k] as *const AtomicU64 as *mut u8],
        first: 10,
        next: AtomicU64::new(next),
        lowest: AtomicU64::new(0),
        crowded: false,
        nonblocking,
        nonblocking_from: 3,
        unended: Mutex::default(),
    };
    let board = lane(0, 15, Some(Arc::new(lane(1, 12, None))));
    assert!(board.nonblocking_lane(2).is_none(), "turns before the agreement's count go by messages");
    assert!(board.nonblocking_lane(3).is_some());
    let pool = BoardPool::default();
    pool.lock().free = 0;
    board.release(&pool, false);
    assert_eq!(pool.offer().0, [0, 14], "the nonblocking lane is still read");
    pool.settle(true, 0);
    marks[1].store(11, Ordering::Release);
    assert_eq!(pool.offer().0, [1 << 2, 14], "both lanes read: the slot is back");
}

#[test]
fn the_blocking_flag_is_restored_even_when_nested() {
    assert!(!in_blocking_call());
    blocking(true, || {
        assert!(in_blocking_call());
        blocking(false, || assert!(!in_blocking_call()));
        assert!(in_blocking_call());
    });
    assert!(!in_blocking_call());
}
