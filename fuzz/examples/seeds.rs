//! Writes the seed corpus: `cargo run --example seeds --no-default-features -- DIR` fills
//! `DIR/<target>/` for every fuzz target (see `src/seeds.rs`).

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    for target in billboard_fuzz::seeds::TARGETS {
        let at = dir.join(target);
        std::fs::create_dir_all(&at)?;
        for (name, bytes) in billboard_fuzz::seeds::seeds(target) {
            std::fs::write(at.join(format!("seed-{name}")), bytes)?;
        }
    }
    Ok(())
}
