//! The message path's cost in instructions, free of waiting: a 1-rank job sends to itself and
//! receives, N times. Run under callgrind and divide by N (see bench/README.md):
//! `valgrind --tool=callgrind target/release/examples/path_cost 100000 8` (blocking send and
//! receive), or with a third argument `window`: N rounds of 64 irecv, 64 isend, wait_all
//! (divide by 64 N).
fn main() -> billboard::Result<()> {
    let mut args = std::env::args().skip(1);
    let iterations = args.next().map_or(100_000, |a| a.parse::<usize>().expect("a number"));
    let bytes = args.next().map_or(8, |a| a.parse::<usize>().expect("a number"));
    let window = args.next().as_deref() == Some("window");
    let universe = billboard::init()?;
    let world = universe.world();
    // SAFETY: one thread.
    unsafe { world.assume_serialized() };
    let out = vec![7u8; bytes];
    let mut back = vec![vec![0u8; bytes]; 64];
    for _ in 0..iterations {
        if window {
            // SAFETY: every request is waited for below (none is leaked). The unsafe forms, not a
            // scope, so the count is the engine's path alone, comparable across versions.
            let recvs = back
                .iter_mut()
                .map(|b| unsafe { world.irecv(&mut b[..], 0, 1) })
                .collect::<billboard::Result<Vec<_>>>()?;
            // SAFETY: as above.
            let sends =
                (0..64).map(|_| unsafe { world.isend(&out[..], 0, 1) }).collect::<billboard::Result<Vec<_>>>()?;
            billboard::wait_all(recvs)?;
            billboard::wait_all(sends)?;
        } else {
            world.send(&out[..], 0, 1)?;
            world.recv(&mut back[0][..], 0, 1)?;
        }
    }
    assert_eq!(out, back[0]);
    universe.finalize()
}
