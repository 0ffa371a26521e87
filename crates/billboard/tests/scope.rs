//! A request leaked inside a scope is still waited for: its buffer holds the message when the
//! scope returns, and is not touched after (a one-rank job talking to itself).

#[test]
fn leaked_requests_are_waited_for_by_their_scope() -> billboard::Result<()> {
    let universe = billboard::init()?;
    let world = universe.world();

    // A receive leaked before its message is sent: the scope's end waits for it.
    let mut got = vec![0u8; 64];
    let data: Vec<u8> = (0..64).collect();
    world.scope(|s| -> billboard::Result<()> {
        std::mem::forget(s.irecv(&mut got[..], 0, 1)?);
        world.send(&data[..], 0, 1)
    })?;
    assert_eq!(got, data, "the leaked receive was completed before the scope returned");

    // A rendezvous send leaked, its receive leaked too: both end before the scope does.
    let big: Vec<u8> = (0..1 << 20).map(|i| (i * 7) as u8).collect();
    let mut back = vec![0u8; 1 << 20];
    world.scope(|s| -> billboard::Result<()> {
        std::mem::forget(s.isend(&big[..], 0, 2)?);
        std::mem::forget(s.irecv(&mut back[..], 0, 2)?);
        Ok(())
    })?;
    assert!(back == big, "the leaked rendezvous completed");

    // A scope that unwinds waits too, before the buffer it lent is dropped.
    let mut late = vec![0u8; 8];
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.scope(|s| {
            world.send(&[5u8; 8][..], 0, 3).unwrap();
            std::mem::forget(s.irecv(&mut late[..], 0, 3).unwrap());
            panic!("in the scope");
        })
    }));
    assert!(unwound.is_err());
    assert_eq!(late, [5; 8], "the leaked receive ended before the unwinding scope did");

    // Requests finished the usual way leave nothing to the scope's end; results come out.
    let mut pair = [0u32; 2];
    let status = world.scope(|s| {
        let r = s.irecv(&mut pair, 0, 4)?;
        s.isend(&[7u32, 9], 0, 4)?.wait()?;
        r.wait()
    })?;
    assert_eq!((pair, status.bytes()), ([7, 9], 8));
    universe.finalize()
}
