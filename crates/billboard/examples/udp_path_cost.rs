//! The UDP route's own cost in instructions, free of waiting: two channels of one process over
//! loopback (a datagram sent is in the peer's socket when the send returns), N round trips of
//! B bytes (A sends, B polls and answers, A polls), or with a third argument `idle`, N polls that
//! find nothing. Run under callgrind with N and 2N and divide the difference by N (see
//! bench/README.md, "The message path in instructions"):
//! `valgrind --tool=callgrind target/release/examples/udp_path_cost 20000 512`.
use billboard::transport::{udp, Channel, Header};

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds = args.next().map_or(10_000, |a| a.parse::<usize>().expect("a number"));
    let bytes = args.next().map_or(512, |a| a.parse::<usize>().expect("a number"));
    let idle = args.next().as_deref() == Some("idle");
    let mut eps = udp::endpoints(2);
    let mut b = eps.pop().expect("two");
    let mut a = eps.pop().expect("two");
    let payload = vec![7u8; bytes];
    let header = Header { kind: 1, context: 1, source: 0, tag: 3, aux: 0 };
    // Polls that found nothing where a datagram was expected (the kernel had not queued it yet):
    // each adds an idle poll's cost to the count, so say how many.
    let mut missed = 0usize;
    let mut take = |ch: &mut udp::UdpChannel, from: usize| {
        while ch.poll(Some(from), |_, _, p| assert_eq!(p.len(), bytes)) == 0 {
            missed += 1;
        }
    };
    for _ in 0..rounds {
        if idle {
            assert_eq!(a.poll(None, |_, _, _| panic!("nothing was sent")), 0);
            continue;
        }
        a.try_send(1, &header, &payload).expect("a window of room");
        take(&mut b, 0);
        b.try_send(0, &header, &payload).expect("a window of room");
        take(&mut a, 1);
    }
    eprintln!(
        "udp_path_cost: {rounds} {}, {missed} polls found nothing",
        if idle { "idle polls" } else { "round trips" }
    );
}
