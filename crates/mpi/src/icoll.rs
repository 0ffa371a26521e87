//! A nonblocking collective's request: the schedule the engine moves on
//! ([`billboard::Collective`], started in `coll.rs`), and what is left to do when it ends.
//! Every I-collective is one; none needs a thread or a new communicator.

use billboard::Collective;

use crate::error::Res;

/// A nonblocking collective in flight, as the request table holds it: the schedule, and what
/// is left to do when it ends (see [`crate::coll::Started`]).
pub(crate) struct Scheduled {
    coll: Collective,
    done: Option<Box<dyn FnOnce()>>,
}

impl Scheduled {
    pub(crate) fn new(coll: Collective, done: Option<Box<dyn FnOnce()>>) -> Box<Scheduled> {
        Box::new(Scheduled { coll, done })
    }

    /// Makes progress once; whether the operation has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.coll.test()
    }

    /// Waits for the operation (at once if [`Scheduled::is_done`]) and finishes it.
    pub(crate) fn wait(self) -> Res<()> {
        let Scheduled { coll, done } = self;
        coll.wait()?;
        if let Some(done) = done {
            done();
        }
        Ok(())
    }
}
