//! `udp_endpoint`: one rank's end of the UDP route (`transport/udp/endpoint.rs` and `peer.rs`)
//! fed by a peer that holds the job's secret but sends whatever it likes: datagrams sealed with
//! the right key whose fields (kind, flags, sequence, acknowledgements, transmission numbers,
//! body) all come from the fuzz input, unsealed garbage, timer ticks and records of its own to
//! send. The MAC keeps strangers out; this is what stands between a buggy or hostile member of
//! the job and a panic. Properties: nothing panics, a refused datagram changes nothing that is
//! delivered, no record longer than the route's limit comes out, and records come out whole
//! (their length prefix is their payload's length).

use billboard::transport::udp::endpoint::Endpoint;
use billboard::transport::udp::peer::Config;
use billboard::transport::udp::wire::{self, Head, Key};
use billboard::transport::Header;

use crate::handshake::secret;
use crate::input::Input;

/// Most steps one input runs (each a datagram, a tick or a send).
const MAX_STEPS: usize = 512;
/// The receiving rank (0) and the fuzzed peer (1), of 2.
const ME: usize = 0;
const PEER: u32 = 1;

/// The route's settings, small enough that windows fill and timers fire within an input.
pub fn config() -> Config {
    Config {
        body: 256,
        window: 16,
        max_record: 4096,
        rto_initial: 5_000,
        rto_min: 1_000,
        rto_max: 100_000,
        deadline: 1_000_000,
        ack_every: 4,
        ack_delay: 200,
        keepalive: 0,
    }
}

/// The first bytes of a record's first datagram: its header and payload length.
pub fn record_prefix(header: &Header, len: u32) -> Vec<u8> {
    [&header.to_bytes()[..], &len.to_le_bytes()].concat()
}

/// A datagram from the peer to this rank, sealed with the job's key.
pub fn sealed(key: &mut Key, head: &Head, body: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(wire::HEAD + body.len() + wire::MAC);
    head.put(&mut d);
    d.extend_from_slice(body);
    key.seal(&mut d);
    d
}

pub fn check(data: &[u8]) {
    drive(data);
}

/// Runs the steps `data` describes; returns how many records came out.
pub fn drive(data: &[u8]) -> usize {
    let mut input = Input::new(data);
    let cfg = config();
    let mut endpoint = Endpoint::new(ME, 2, Key::new(&secret()), cfg.clone());
    let mut peer_key = Key::new(&secret());
    let mut now = 1_000u64;
    let mut delivered = 0usize;
    let mut fed = 0usize;
    for _ in 0..MAX_STEPS {
        if input.is_empty() {
            break;
        }
        let op = input.byte();
        match op % 6 {
            // A datagram of the peer: every field from the input.
            0..=2 => {
                let kind = match op % 3 {
                    0 => wire::DATA,
                    1 => wire::ACK,
                    _ => input.byte() % 5, // FIN, or a kind that does not exist
                };
                let head = Head {
                    kind,
                    flags: input.byte() & 3,
                    src: if input.byte() == 0xff { input.u32() } else { PEER },
                    dst: ME as u32,
                    seq: input.u16() as u64,
                    ack: input.u16() as u64,
                    sack: input.u64(),
                    xmit: input.u16() as u32,
                    echo: input.u16() as u32,
                };
                let mut body = Vec::new();
                if head.flags & wire::FIRST != 0 && input.byte() & 1 == 0 {
                    // Mostly an honest record prefix, so reassembly gets exercised past it.
                    let header = Header { kind: input.byte() as u32, context: 1, source: PEER, tag: 7, aux: 0 };
                    body.extend(record_prefix(&header, input.u16() as u32));
                }
                let len = input.byte() as usize;
                body.extend_from_slice(input.take(len));
                let mut d = sealed(&mut peer_key, &head, &body);
                fed += 1;
                let _ = endpoint.receive(now, &mut d, &mut |from, h, payload| {
                    assert_eq!(from, PEER as usize, "a record from a rank that did not send it: {h:?}");
                    assert!(payload.len() <= cfg.max_record, "a record past the route's limit");
                    delivered += 1;
                });
            }
            // Bytes that were never sealed: refused, whatever they hold.
            3 => {
                let len = input.byte() as usize;
                let mut d = input.take(len).to_vec();
                if d.len() >= 4 {
                    d[..4].copy_from_slice(wire::MAGIC);
                }
                let before = delivered;
                assert!(
                    endpoint.receive(now, &mut d, &mut |_, _, _| delivered += 1).is_err(),
                    "an unsealed datagram was taken"
                );
                assert_eq!(delivered, before);
            }
            // Time passes; due timers run; what is ready leaves.
            4 => {
                now += input.u16() as u64 * 8;
                endpoint.on_timer(now);
                endpoint.transmit(|peer, datagram| {
                    assert_eq!(peer, PEER as usize);
                    assert!(datagram.len() <= wire::HEAD + cfg.body + wire::MAC);
                    true
                });
                let _ = endpoint.take_failure();
            }
            // This rank sends a record of its own to the peer, where the window has room.
            _ => {
                let len = input.u16() as usize % (cfg.max_record + 1);
                let payload = vec![0x5a; len];
                let header = Header { kind: 1, context: 1, source: ME as u32, tag: 3, aux: len as u64 };
                let _ = endpoint.send(now, PEER as usize, &header, &[&payload]);
            }
        }
    }
    // Every record came from at least one datagram (a datagram completes at most one record
    // here: bodies are no larger than one datagram's).
    assert!(delivered <= fed, "{delivered} records from {fed} datagrams");
    delivered
}
