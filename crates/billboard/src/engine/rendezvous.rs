//! The sender's rendezvous, sans IO: what a send of a message past the eager limit does with
//! each answer of the receiver, from the RTS to its end. The machine is a function of the
//! send's phase (read from its request `State`) and the event; it holds nothing itself, so a
//! request keeps its 64-byte state and the small-message path pays nothing. The engine
//! (`records.rs`, `large.rs`, `failure.rs`) does what it returns.
//!
//! ```text
//! phase        event                          -> step
//! Queued       Room (in the peer's ring)      -> PostRts: RTS out, Waiting
//! Waiting      FIN                            -> Complete (the receiver read it all)
//!              CTS                            -> Pipeline (pipeline.rs), made active
//!              SHARE, we may write its memory -> Help (SharedSend in shared_copy.rs), active
//!              SHARE, our writes were refused -> Decline: the receiver copies alone
//! Helping      FIN                            -> Complete (it took nothing: nothing in flight)
//!              CTS (the receiver restarted)   -> Pipeline, active already
//! any          PeerFailed                     -> Fail: the send fails naming the receiver
//! otherwise    (a FIN, CTS or SHARE the phase cannot take: a second answer, an answer
//!              before the RTS went out, a SHARE naming a claim word the pair lacks)
//!                                             -> Violation: fails the receiver
//! ```

/// Where a rendezvous send stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Behind earlier sends to the peer: its RTS has not gone out.
    Queued,
    /// RTS out, waiting for the receiver's FIN, CTS or SHARE.
    Waiting,
    /// Writing pages of a shared copy the receiver asked for.
    Helping,
    /// Sending DATA chunks after a CTS.
    Pipelining,
}

/// What happened to the send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The peer's ring has room for the RTS.
    Room,
    /// The receiver's FIN: it has read the whole message.
    Fin,
    /// The receiver's CTS: it cannot read our memory; pipeline.
    Cts,
    /// The receiver's SHARE; `slot_ok`: it names a claim word the pair has; `may_write`: the
    /// kernel has not refused our writes into the receiver's memory.
    Share { slot_ok: bool, may_write: bool },
    /// The receiver failed (its route broke, or it broke the protocol).
    PeerFailed,
}

/// What the engine does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Post the RTS; the send waits for the answer.
    PostRts,
    /// Nothing changes.
    Stay,
    /// The send is complete.
    Complete,
    /// Pipeline the message; `activate`: put the send on the active list (a helping send is
    /// on it already).
    Pipeline { activate: bool },
    /// Help with the shared copy; put the send on the active list.
    Help,
    /// Leave the copy to the receiver.
    Decline,
    /// The send fails naming the receiver.
    Fail,
    /// The record breaks the protocol: fail the receiver; the text says why.
    Violation(&'static str),
}

/// The sender's rendezvous machine: the step for `event` in `phase`.
pub(crate) fn answer(phase: Phase, event: Answer) -> Step {
    use Answer::*;
    use Phase::*;
    match (phase, event) {
        (_, PeerFailed) => Step::Fail,
        (Queued, Room) => Step::PostRts,
        (_, Room) => Step::Stay,
        (Waiting | Helping, Fin) => Step::Complete,
        (Waiting, Cts) => Step::Pipeline { activate: true },
        (Helping, Cts) => Step::Pipeline { activate: false },
        (Waiting, Share { slot_ok: false, .. }) => Step::Violation("a claim word the pair lacks"),
        (Waiting, Share { may_write: true, .. }) => Step::Help,
        (Waiting, Share { may_write: false, .. }) => Step::Decline,
        (Queued, Fin | Cts | Share { .. }) => Step::Violation("its RTS is not out yet"),
        (Helping, Share { .. }) => Step::Violation("a second SHARE"),
        (Pipelining, Fin | Cts | Share { .. }) => Step::Violation("it pipelines already"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHASES: [Phase; 4] = [Phase::Queued, Phase::Waiting, Phase::Helping, Phase::Pipelining];

    fn events() -> Vec<Answer> {
        let mut all = vec![Answer::Room, Answer::Fin, Answer::Cts, Answer::PeerFailed];
        for slot_ok in [false, true] {
            for may_write in [false, true] {
                all.push(Answer::Share { slot_ok, may_write });
            }
        }
        all
    }

    /// Every (phase, event) pair, against the table in the module's comment.
    #[test]
    fn every_transition() {
        use Answer::*;
        use Phase::*;
        use Step::*;
        let share = |slot_ok, may_write| Share { slot_ok, may_write };
        let expected = |p: Phase, e: Answer| -> Step {
            match (p, e) {
                (_, PeerFailed) => Fail,
                (Queued, Room) => PostRts,
                (_, Room) => Stay,
                (Waiting, Fin) | (Helping, Fin) => Complete,
                (Waiting, Cts) => Pipeline { activate: true },
                (Helping, Cts) => Pipeline { activate: false },
                (Waiting, s) if s == share(true, true) => Help,
                (Waiting, s) if s == share(true, false) => Decline,
                _ => Violation(""),
            }
        };
        for p in PHASES {
            for e in events() {
                let got = answer(p, e);
                match expected(p, e) {
                    Violation(_) => assert!(matches!(got, Violation(w) if !w.is_empty()), "{p:?} {e:?}: {got:?}"),
                    want => assert_eq!(got, want, "{p:?} {e:?}"),
                }
            }
        }
    }

    /// The phase a step leaves the send in (None: it ended).
    fn next(p: Phase, s: Step) -> Option<Phase> {
        match s {
            Step::PostRts => Some(Phase::Waiting),
            Step::Stay | Step::Decline => Some(p),
            Step::Complete | Step::Fail | Step::Violation(_) => None,
            Step::Pipeline { .. } => Some(Phase::Pipelining),
            Step::Help => Some(Phase::Helping),
        }
    }

    proptest::proptest! {
        /// Any order of answers, with repeats and drops (a helping send goes back to waiting
        /// at any point): the send ends exactly once, only by FIN, failure or a violation;
        /// it pipelines or helps only after its RTS; after the receiver fails nothing
        /// completes it; a pipelining send takes no further answer.
        #[test]
        fn any_order_of_answers_ends_the_send_once(
            events in proptest::collection::vec((0usize..8, proptest::bool::ANY), 0..24),
        ) {
            let all = events_list();
            let mut phase = Some(Phase::Queued);
            let mut ends = 0;
            let mut rts = false;
            for (k, back) in events {
                let Some(p) = phase else {
                    // Ended: the request is no longer a rendezvous send; the engine finds
                    // none and fails the peer without asking the machine.
                    break;
                };
                // The shared copy's end (nothing left to claim) returns a helper to waiting.
                let p = if p == Phase::Helping && back { Phase::Waiting } else { p };
                let e = all[k];
                let s = answer(p, e);
                if s == Step::PostRts { rts = true; }
                if matches!(s, Step::Pipeline { .. } | Step::Help | Step::Complete) {
                    proptest::prop_assert!(rts, "{:?} before the RTS", s);
                }
                if e == Answer::PeerFailed {
                    proptest::prop_assert_eq!(s, Step::Fail);
                }
                if p == Phase::Pipelining && e != Answer::Room && e != Answer::PeerFailed {
                    proptest::prop_assert!(matches!(s, Step::Violation(_)));
                }
                phase = next(p, s);
                if phase.is_none() { ends += 1; }
            }
            proptest::prop_assert!(ends <= 1);
        }
    }

    fn events_list() -> [Answer; 8] {
        events().try_into().unwrap()
    }
}
