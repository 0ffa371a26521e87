//! Test helper for bbrun: a rank that uses the library's PMI-1 client.
//!
//! Default: put `probe-{rank}`, barrier, read every rank's key and print
//! `rank R of N: probe-J=from-J` for each J, then finalize.
//! `--quick`: connect, one barrier, finalize (the launcher's start-up cost, for timing).
//! `--abort CODE`: rank 1 (or rank 0 in a 1-rank job) calls PMI abort with CODE after the
//! first barrier; the others wait in a second barrier that never completes.
//! `--exit-early`: the last rank exits with code 0 right after connecting, without finalize;
//! the others wait in a barrier that never completes.

use billboard::bootstrap::pmi::Pmi;

fn main() {
    if let Err(e) = run() {
        eprintln!("bb-pmi-probe: {e}");
        std::process::exit(1);
    }
}

fn run() -> billboard::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pmi =
        Pmi::from_env()?.ok_or_else(|| billboard::Error::Bootstrap("not started by a PMI launcher".into()))?;
    let (rank, size) = (pmi.rank(), pmi.size());
    match args.first().map(String::as_str) {
        Some("--quick") => pmi.barrier()?,
        Some("--exit-early") if rank == size - 1 => std::process::exit(0),
        Some("--exit-early") => pmi.barrier()?,
        Some("--abort") => {
            let code: i32 = args.get(1).and_then(|c| c.parse().ok()).unwrap_or(1);
            pmi.barrier()?;
            if rank == 1.min(size - 1) {
                pmi.abort(code, "probe asked to abort")?;
                std::thread::sleep(std::time::Duration::from_secs(30));
            }
            pmi.barrier()?;
        }
        _ => {
            pmi.put(&format!("probe-{rank}"), &format!("from-{rank}"))?;
            pmi.barrier()?;
            for peer in 0..size {
                let key = format!("probe-{peer}");
                println!("rank {rank} of {size}: {key}={}", pmi.get(&key)?);
            }
        }
    }
    pmi.finalize()
}
