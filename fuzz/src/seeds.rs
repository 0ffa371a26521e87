//! The seed corpus: a few valid inputs per target, so the fuzzer starts from frames and exchanges
//! that get past the first checks. Generated (by `examples/seeds.rs`) rather than committed, so
//! the seeds follow the wire format when it changes.

use billboard::bootstrap::pmi::wire::format_line;
use billboard::transport::tcp::handshake::{Initiator, VERSION};
use billboard::transport::tcp::wire::{encode, FrameHeader};
use billboard::transport::Header;

use crate::handshake::{secret, ACCEPTOR};

/// The fuzz targets, as named in Cargo.toml.
pub const TARGETS: [&str; 6] =
    ["wire_decode", "frame_reader", "handshake_acceptor", "handshake_initiator", "pmi_line", "udp_endpoint"];

/// Seeds of `target`: (file name, bytes).
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let named = |prefix: &str, all: Vec<Vec<u8>>| -> Vec<(String, Vec<u8>)> {
        all.into_iter().enumerate().map(|(i, s)| (format!("{prefix}-{i}"), s)).collect()
    };
    match target {
        "wire_decode" => {
            named("header", [header(0), header(5), FrameHeader::Close].iter().map(|h| encode(h).to_vec()).collect())
        }
        "frame_reader" => named("frames", frame_reader()),
        "handshake_acceptor" => named("handshake", handshake(true)),
        "handshake_initiator" => named("handshake", handshake(false)),
        "pmi_line" => named("line", pmi_lines()),
        "udp_endpoint" => named("datagrams", udp_datagrams()),
        _ => panic!("unknown fuzz target {target}"),
    }
}

fn header(len: u32) -> FrameHeader {
    FrameHeader::Record { header: Header { kind: 1, context: 2, source: 3, tag: -4, aux: 5 }, len }
}

/// Streams of valid frames, raw (mode 0) and described (mode 1), in various chunkings.
fn frame_reader() -> Vec<Vec<u8>> {
    let mut raw = Vec::new();
    for len in [0, 5, 17, 1, 0, 64] {
        raw.extend_from_slice(&encode(&header(len)));
        raw.extend(std::iter::repeat_n(0xa5, len as usize));
    }
    raw.extend_from_slice(&encode(&FrameHeader::Close));
    // A description of one frame: kind byte, u16 length, the engine header (4 + 4 + 4 + 4 + 8
    // bytes), payload seed: see `frames::describe`.
    let describe = |kind: u8, len: u16| [&[kind][..], &len.to_le_bytes(), &[2; 24], &[0x5a]].concat();
    let small: Vec<u8> = (0..7).flat_map(|k| describe(if k == 6 { 1 } else { 0 }, 16 * k)).collect();
    let large = [describe(0x80, 0x1fff), describe(0x80, 0xffff), describe(1, 0)].concat();
    vec![
        [&[0, 0][..], &raw].concat(),
        [&[2, 3, 1, 7, 60][..], &raw].concat(),
        [&[1, 0][..], &small].concat(),
        [&[3, 2, 0, 55][..], &small].concat(),
        [&[1, 1, 0xF2][..], &large].concat(),
    ]
}

/// A real first message (mode 0), and honest relays (mode 2) in whole and byte-sized chunks.
fn handshake(acceptor: bool) -> Vec<Vec<u8>> {
    let first = if acceptor {
        Initiator::new(&secret(), 0, ACCEPTOR).expect("getrandom").take_transmit()
    } else {
        // A CHALLENGE's layout with a made-up nonce and MAC.
        [&b"BBhs"[..], &VERSION.to_le_bytes(), &ACCEPTOR.to_le_bytes(), &[0x11; 32], &[0x22; 32]].concat()
    };
    let trailing = encode(&header(0));
    vec![
        [&[0, 0][..], &first].concat(),
        [&[1, 1, 4][..], &[0; 80]].concat(),
        // Mode 2, chunks whole, rank 0, no tampering of either message, then a frame.
        [&[2, 0, 0, 0][..], &[0; 7], &trailing].concat(),
        // The same in 1-byte chunks, rank 2.
        [&[2, 1, 0, 2, 0][..], &[0; 7], &trailing].concat(),
        // One flipped byte in the second message.
        [&[2, 0, 3, 0][..], &[1, 40, 1, 0, 0, 0, 0]].concat(),
    ]
}

/// Honest traffic for `udp_endpoint` (see `udp::check` for the layout of a step): records of one
/// datagram each in order, with ticks and sends between; a record in three fragments; the same
/// datagram twice; an acknowledgement and a FIN; acknowledgements with selective ranges of
/// records this side sent.
fn udp_datagrams() -> Vec<Vec<u8>> {
    // op 0 = DATA: flags, src marker, seq u16, ack u16, sack u64, xmit u16, echo u16, then for a
    // FIRST fragment: 0 (honest prefix), header kind, payload length u16; then body length, body.
    let data = |flags: u8, seq: u16, prefix: Option<u16>, body: &[u8]| -> Vec<u8> {
        let mut s = vec![0, flags, 0];
        s.extend_from_slice(&seq.to_le_bytes());
        s.extend_from_slice(&[0, 0]);
        s.extend_from_slice(&[0; 8]);
        s.extend_from_slice(&(seq + 1).to_le_bytes());
        s.extend_from_slice(&[0, 0]);
        if let Some(len) = prefix {
            s.extend_from_slice(&[0, 1]);
            s.extend_from_slice(&len.to_le_bytes());
        }
        s.push(body.len() as u8);
        s.extend_from_slice(body);
        s
    };
    // An acknowledgement (op 1) or a FIN (op 2, kind byte 3) of everything below `ack`.
    let control = |fin: bool, ack: u16| -> Vec<u8> {
        let mut s = if fin { vec![2, 3] } else { vec![1] };
        s.extend_from_slice(&[0, 0, 0, 0]);
        s.extend_from_slice(&ack.to_le_bytes());
        s.extend_from_slice(&[0; 12]);
        s.push(0);
        s
    };
    // An acknowledgement of everything below `ack` and of the ranges (offset past `ack`, length).
    let ranged = |ack: u16, ranges: &[(u32, u32)]| -> Vec<u8> {
        let mut s = vec![1, 0, 0, 0, 0];
        s.extend_from_slice(&ack.to_le_bytes());
        s.extend_from_slice(&[0; 12]);
        s.push((ranges.len() * 8) as u8);
        for &(off, len) in ranges {
            s.extend_from_slice(&off.to_le_bytes());
            s.extend_from_slice(&len.to_le_bytes());
        }
        s
    };
    let tick = [4u8, 0x10, 0x00];
    let send = [5u8, 0x40, 0x00];
    let whole = |seq: u16| data(3, seq, Some(5), b"hello");
    vec![
        [whole(0), tick.to_vec(), whole(1), send.to_vec(), tick.to_vec(), whole(2)].concat(),
        [data(1, 0, Some(12), b"abcd"), data(0, 1, None, b"efgh"), data(2, 2, None, b"ijkl"), tick.to_vec()].concat(),
        [whole(0), whole(0), tick.to_vec(), control(false, 1), tick.to_vec()].concat(),
        [whole(0), control(true, 1), tick.to_vec(), whole(1)].concat(),
        [&send[..], &send, &send, &send, &send, &tick, &ranged(0, &[(2, 1), (4, 1)]), &tick, &control(false, 5)].concat(),
    ]
}

fn pmi_lines() -> Vec<Vec<u8>> {
    let lines = [
        format_line("init", &[("pmi_version", "1"), ("pmi_subversion", "1")]),
        format_line("put", &[("kvsname", "kvs_1"), ("key", "bb-tcp-0"), ("value", "10.0.0.1:4000")]),
        format_line("get_result", &[("rc", "0"), ("msg", "success"), ("value", "abc")]),
        "cmd=get_result rc=-1 msg=key foo not found\n".to_string(),
        "cmd=abort exitcode=3 error_msg=rank 1: x=y failed\r\n".to_string(),
        "mcmd=spawn\n".to_string(),
        "  cmd=put\tkvsname=k   key=a  value=\n".to_string(),
    ];
    lines.into_iter().map(String::into_bytes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed passes its target's checks (the honest relays must finish, the rest must not).
    #[test]
    fn seeds_pass_their_checks() {
        for target in TARGETS {
            let check: fn(&[u8]) = match target {
                "wire_decode" => crate::wire::check,
                "frame_reader" => crate::frames::check,
                "handshake_acceptor" => crate::handshake::check_acceptor,
                "handshake_initiator" => crate::handshake::check_initiator,
                "udp_endpoint" => crate::udp::check,
                _ => crate::pmi::check,
            };
            for (name, bytes) in seeds(target) {
                eprintln!("{target}/{name}");
                check(&bytes);
            }
        }
    }

    /// The honest UDP seeds deliver what they carry: three records, one record of three
    /// fragments, one record sent twice, one record before the FIN (none after it), none from
    /// acknowledgements (with ranges) of what this side sent.
    #[test]
    fn honest_datagrams_come_out_record_for_record() {
        let delivered: Vec<usize> = udp_datagrams().iter().map(|s| crate::udp::drive(s)).collect();
        assert_eq!(delivered, [3, 1, 1, 1, 0]);
    }

    #[test]
    fn valid_streams_come_out_frame_for_frame() {
        use crate::input::{Chunker, Input};
        for seed in frame_reader() {
            let mut input = Input::new(&seed);
            let mode = input.byte();
            let _ = Chunker::read(&mut input);
            if mode & 1 == 0 {
                let (frames, err, left) =
                    crate::frames::drive(input.rest(), &mut Chunker::read(&mut Input::new(&[])), false);
                assert_eq!((frames.len(), err, left), (7, None, 0));
            }
        }
    }
}
