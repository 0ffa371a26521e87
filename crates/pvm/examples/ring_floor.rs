//! The PVM route's own floor: two processes ping-pong one message frame (the 28-byte header
//! and SIZE bytes) through a pair of the library's shared-memory rings (`ring.rs`) and frame
//! buffers, with none of the library's calls around them, spinning on the ring. What a PVM
//! ping-pong costs beyond this is the library's; what this costs beyond `bb-bench floor`'s
//! bare ping-pong is the ring's.
//!
//! `ring_floor [SIZE] [ITERS] [TRIALS]` (default 1, 20000, 21): prints the median one-way time
//! in us. PIN=1 pins the two processes to cores 0 and 1 (bench/README.md, "PVM").

use std::time::Instant;

use pvm::ring::Ring;
use pvm::wire::{message_header, Frame, FrameBuffer};

fn pin(core: usize) {
    if std::env::var("PIN").as_deref() != Ok("1") {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity use it in place.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Sends one frame and waits for one back.
fn bounce(tx: &mut Ring, rx: &mut Ring, frames: &mut FrameBuffer, header: &[u8; 28], payload: &[u8]) {
    while !tx.write_whole(&[header, payload]) {
        std::hint::spin_loop();
    }
    receive(rx, frames);
}

fn receive(rx: &mut Ring, frames: &mut FrameBuffer) {
    loop {
        rx.read_into(frames).expect("a well-formed ring");
        if let Some(Frame::Message { .. }) = frames.next_frame().expect("a well-formed frame") {
            return;
        }
        std::hint::spin_loop();
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let size = args.first().copied().unwrap_or(1);
    let iters = args.get(1).copied().unwrap_or(20000);
    let trials = args.get(2).copied().unwrap_or(21);
    let (mut ping, ping_fd) = Ring::create(1 << 20).expect("a ring");
    let (mut pong, pong_fd) = Ring::create(1 << 20).expect("a ring");
    let header = message_header(0x40001, 1, 0, 1, size).expect("a small frame");
    let payload = vec![7u8; size];
    // SAFETY: fork in a single-threaded program; the child only uses its own copies.
    match unsafe { libc::fork() } {
        0 => {
            pin(1);
            let (mut rx, mut frames) = (Ring::open(&ping_fd).expect("the ping ring"), FrameBuffer::default());
            for _ in 0..iters * (trials + 1) {
                receive(&mut rx, &mut frames);
                while !pong.write_whole(&[&header, &payload]) {
                    std::hint::spin_loop();
                }
            }
            std::process::exit(0);
        }
        pid if pid > 0 => {
            pin(0);
            let (mut rx, mut frames) = (Ring::open(&pong_fd).expect("the pong ring"), FrameBuffer::default());
            let mut times = Vec::with_capacity(trials);
            for t in 0..=trials {
                let start = Instant::now();
                for _ in 0..iters {
                    bounce(&mut ping, &mut rx, &mut frames, &header, &payload);
                }
                // Trial 0 warms up.
                if t > 0 {
                    times.push(start.elapsed().as_secs_f64() / iters as f64 / 2.0 * 1e6);
                }
            }
            let mut status = 0;
            // SAFETY: waits for the child forked above.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            times.sort_by(f64::total_cmp);
            println!("{:.4}", times[times.len() / 2]);
        }
        _ => panic!("fork failed"),
    }
}
