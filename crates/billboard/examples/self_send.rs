//! A one-rank job sends messages of every protocol to itself.
fn main() -> billboard::Result<()> {
    let universe = billboard::init()?;
    let world = universe.world();
    for &n in &[0usize, 8, 100, 4000, 60_000, 1 << 20, 5 << 20] {
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
        let mut got = vec![0u8; n];
        let st = world.scope(|s| {
            let r = s.irecv(&mut got[..], 0, 5)?;
            s.isend(&data[..], 0, 5)?.wait()?;
            r.wait()
        })?;
        assert_eq!(st.bytes(), n);
        assert!(got == data, "content mismatch at {n} bytes");
        println!("{n} bytes ok");
    }
    universe.finalize()
}
