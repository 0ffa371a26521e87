//! Fault injection on outgoing datagrams, for tests on real sockets where no `netem` qdisc
//! exists: `BB_UDP_FAULTS=loss=5,dup=1,reorder=10,seed=7` drops 5 %, sends 1 % twice and holds
//! 10 % back behind the next one to three datagrams (or 200 µs) (percentages may have decimals). The choices
//! come from a xorshift generator seeded with `seed` and the rank, so a run is repeatable.

use std::net::SocketAddr;

pub const FAULTS_ENV: &str = "BB_UDP_FAULTS";
/// A datagram held back leaves after this long even if no other passes it (µs).
const HOLD_US: u64 = 200;

pub struct Faults {
    /// Per 10,000 datagrams.
    loss: u64,
    dup: u64,
    reorder: u64,
    rng: u64,
    /// Datagrams held back: destination, bytes, datagrams still to pass them, and when they
    /// leave anyway (µs).
    held: Vec<(SocketAddr, Vec<u8>, u64, u64)>,
    /// Datagrams dropped, duplicated, reordered so far.
    pub counts: [u64; 3],
}

impl Faults {
    /// The faults `BB_UDP_FAULTS` asks for on rank `me`, if any.
    pub fn from_env(me: usize) -> Result<Option<Faults>, String> {
        match std::env::var(FAULTS_ENV) {
            Err(_) => Ok(None),
            Ok(text) if text.trim().is_empty() => Ok(None),
            Ok(text) => Faults::parse(&text, me).map(Some),
        }
    }

    pub fn parse(text: &str, me: usize) -> Result<Faults, String> {
        let bad = |why: String| format!("{FAULTS_ENV}={text:?}: {why} (expected e.g. loss=5,dup=1,reorder=10,seed=7)");
        let mut f = Faults { loss: 0, dup: 0, reorder: 0, rng: 0, held: Vec::new(), counts: [0; 3] };
        let mut seed = 1u64;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| bad(format!("{item:?} has no value")))?;
            if name == "seed" {
                seed = value.parse().map_err(|_| bad(format!("seed {value:?} is not a number")))?;
                continue;
            }
            let pct: f64 = value.parse().map_err(|_| bad(format!("{name} {value:?} is not a number")))?;
            if !(0.0..=100.0).contains(&pct) {
                return Err(bad(format!("{name} {pct} is not a percentage")));
            }
            let per = (pct * 100.0).round() as u64;
            match name {
                "loss" => f.loss = per,
                "dup" => f.dup = per,
                "reorder" => f.reorder = per,
                _ => return Err(bad(format!("unknown fault {name:?}"))),
            }
        }
        f.rng = (seed ^ (me as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
        Ok(f)
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 16
    }

    fn roll(&mut self, per: u64) -> bool {
        per > 0 && self.next() % 10_000 < per
    }

    /// Sends one datagram through the faults: `send` is called for what actually leaves.
    pub fn apply(&mut self, now: u64, to: SocketAddr, d: &[u8], send: &mut dyn FnMut(SocketAddr, &[u8])) {
        if self.roll(self.loss) {
            self.counts[0] += 1;
        } else if self.roll(self.reorder) {
            self.counts[2] += 1;
            let pass = 1 + self.next() % 3;
            self.held.push((to, d.to_vec(), pass, now + HOLD_US));
        } else {
            send(to, d);
            if self.roll(self.dup) {
                self.counts[1] += 1;
                send(to, d);
            }
            for h in &mut self.held {
                h.2 = h.2.saturating_sub(1);
            }
            self.release(now, send, false);
        }
    }

    /// Sends the datagrams held back whose turn or time came (`all`: every one).
    pub fn release(&mut self, now: u64, send: &mut dyn FnMut(SocketAddr, &[u8]), all: bool) {
        let mut i = 0;
        while i < self.held.len() {
            if all || self.held[i].2 == 0 || self.held[i].3 <= now {
                let (to, d, _, _) = self.held.swap_remove(i);
                send(to, &d);
            } else {
                i += 1;
            }
        }
    }

    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_applies_repeatably() {
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let run = |text: &str| {
            let mut f = Faults::parse(text, 3).unwrap();
            let mut out = Vec::new();
            for k in 0..10_000u32 {
                f.apply(0, to, &k.to_le_bytes(), &mut |_, d| out.push(u32::from_le_bytes(d.try_into().unwrap())));
            }
            f.release(0, &mut |_, d| out.push(u32::from_le_bytes(d.try_into().unwrap())), true);
            (out, f.counts)
        };
        let (out, counts) = run("loss=5,dup=1,reorder=10,seed=9");
        assert_eq!(run("loss=5, dup=1, reorder=10, seed=9").0, out, "the same seed, the same faults");
        assert!((400..600).contains(&counts[0]), "about 5 % lost: {counts:?}");
        assert!((50..150).contains(&counts[1]), "about 1 % duplicated: {counts:?}");
        assert!((800..1000).contains(&counts[2]), "about 10 % of the rest reordered: {counts:?}");
        assert_eq!(out.len() as u64, 10_000 - counts[0] + counts[1]);
        assert!(out.windows(2).any(|w| w[0] > w[1]), "some datagrams overtaken");
        assert_eq!(run("").0, (0..10_000).collect::<Vec<_>>());
        for bad in ["loss", "loss=x", "jitter=3", "dup=101"] {
            let e = Faults::parse(bad, 0).err().unwrap();
            assert!(e.contains("BB_UDP_FAULTS"), "{e}");
        }
    }
}
