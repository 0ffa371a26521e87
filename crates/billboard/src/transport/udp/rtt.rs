//! Round-trip time and retransmission timeout: Jacobson/Karels (RFC 6298), in microseconds.
//!
//! SRTT and RTTVAR follow the samples (1/8 and 1/4 gains); RTO = SRTT + max(granularity,
//! 4 RTTVAR), clamped to [`Rtt::min`, `Rtt::max`]; every timeout doubles it (backoff) until a
//! fresh sample. Samples come only from datagrams sent once (Karn), which the caller ensures.

#[derive(Clone, Debug)]
pub struct Rtt {
    srtt: Option<u64>,
    rttvar: u64,
    rto: u64,
    backoff: u32,
    pub min: u64,
    pub max: u64,
}

/// Timer granularity: the wake-up of a sleeping process costs tens of µs here.
const GRANULARITY_US: u64 = 100;

impl Rtt {
    pub fn new(initial: u64, min: u64, max: u64) -> Rtt {
        Rtt { srtt: None, rttvar: 0, rto: initial.clamp(min, max), backoff: 0, min, max }
    }

    /// Takes one round-trip sample.
    pub fn sample(&mut self, r: u64) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        self.backoff = 0;
        self.rto = (self.srtt.unwrap() + GRANULARITY_US.max(4 * self.rttvar)).clamp(self.min, self.max);
    }

    /// A retransmission timer fired: the next waits twice as long.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
        self.rto = self.rto.saturating_mul(2).min(self.max);
    }

    /// The current retransmission timeout.
    pub fn rto(&self) -> u64 {
        self.rto
    }

    /// The smoothed round trip, or the timeout before any sample.
    pub fn srtt(&self) -> u64 {
        self.srtt.unwrap_or(self.rto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_samples_backs_off_and_stays_in_bounds() {
        let mut r = Rtt::new(10_000, 500, 1_000_000);
        assert_eq!(r.rto(), 10_000);
        r.sample(1000);
        // SRTT 1000, RTTVAR 500: RTO = 1000 + 4 * 500.
        assert_eq!((r.srtt(), r.rto()), (1000, 3000));
        for _ in 0..50 {
            r.sample(1000);
        }
        // Steady samples shrink RTTVAR towards 0: the granularity and the floor remain.
        assert_eq!(r.srtt(), 1000);
        assert_eq!(r.rto(), 1100);
        r.sample(9000);
        // SRTT 2000, RTTVAR (3 * ~0 + 8000) / 4 = 2000.
        assert_eq!((r.srtt(), r.rto()), (2000, 10_000));
        r.back_off();
        r.back_off();
        assert_eq!(r.rto(), 40_000);
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.rto(), 1_000_000);
        r.sample(10);
        assert!(r.rto() < 20_000, "a fresh sample ends the backoff: {}", r.rto());
        let mut fast = Rtt::new(10_000, 500, 1_000_000);
        fast.sample(10);
        assert_eq!(fast.rto(), 500, "the floor holds");
    }
}
