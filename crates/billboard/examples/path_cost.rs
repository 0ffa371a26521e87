//! The message path's cost in instructions, free of waiting: a 1-rank job sends to itself and
//! receives, N times. Run under callgrind and divide by N (see crates/bench/README or the
//! engine issue notes): `valgrind --tool=callgrind target/release/examples/path_cost 100000 8`.
fn main() -> billboard::Result<()> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().expect("a number"));
    let iterations = args.next().unwrap_or(100_000);
    let bytes = args.next().unwrap_or(8);
    let universe = billboard::init()?;
    let world = universe.world();
    // SAFETY: one thread.
    unsafe { world.assume_serialized() };
    let out = vec![7u8; bytes];
    let mut back = vec![0u8; bytes];
    for _ in 0..iterations {
        world.send(&out[..], 0, 1)?;
        world.recv(&mut back[..], 0, 1)?;
    }
    assert_eq!(out, back);
    universe.finalize()
}
