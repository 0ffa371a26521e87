//! Nonblocking file access that overlaps the program's work: the access is checked and placed
//! when it starts (its file pointer moved, its shared-pointer slot taken, its errors of
//! arguments returned at the call), and its data moved by one I/O thread per process, in the
//! order the accesses started. The request completes when the thread has moved the data; an
//! error of the move (a full disk, ...) is the request's, reported by the wait or test that
//! completes it, to the file's error handler (MPI_ERRORS_RETURN unless the program set
//! another), not to the communicator's of the completing call (MPI 4.0 section 14.7).
//!
//! Every other call on a file first waits for the file's accesses in flight (`File::drain`,
//! from `call_file`), so a blocking access, a view change, a sync or a close sees them done,
//! in the order the program issued them.
//!
//! ROMIO on Linux (Debian's MPICH 4.0.2) does the same with POSIX AIO, which glibc runs on a
//! helper thread of its own (seen with strace: a clone, then the pwrite on the new thread).

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::{File, MPI_File};
use crate::abi::*;
use crate::error::{err, Res};

/// The outcome of one access in flight, which the I/O thread fills.
pub(crate) struct Pending {
    /// The file's handle, whose error handler an error of the move goes to.
    file: MPI_File,
    outcome: Mutex<Option<Res<MPI_Status>>>,
    done: Condvar,
}

impl Pending {
    fn new(file: MPI_File, outcome: Option<Res<MPI_Status>>) -> Arc<Pending> {
        Arc::new(Pending { file, outcome: Mutex::new(outcome), done: Condvar::new() })
    }

    /// An access of file `fh` that ended at its start (one this thread moved itself).
    pub fn ended(fh: MPI_File, outcome: Res<MPI_Status>) -> Arc<Pending> {
        Pending::new(fh, Some(outcome))
    }

    fn finish(&self, outcome: Res<MPI_Status>) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.done.notify_all();
    }

    /// Whether the data has moved (or failed to).
    pub fn is_done(&self) -> bool {
        self.outcome.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Waits until the data has moved; its status, or the error of the move (raised on the
    /// file's error handler wherever it is reported).
    pub fn wait(&self) -> Res<MPI_Status> {
        let mut outcome = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = outcome.as_ref() {
                return o.clone().map_err(|e| e.on_file(self.file));
            }
            outcome = self.done.wait(outcome).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// How many accesses of one file are in flight, for the calls that must wait for them.
#[derive(Default)]
pub(crate) struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

impl InFlight {
    fn add(&self) {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    fn done(&self) {
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        if *n == 0 {
            self.idle.notify_all();
        }
    }

    /// Waits until none is in flight.
    pub fn drain(&self) {
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self.idle.wait(n).unwrap_or_else(|e| e.into_inner());
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The I/O thread's queue, started at the first nonblocking access. The thread waits on it
/// for the process's life (blocked in recv, it costs nothing, and it ends with the process).
fn queue() -> Res<Sender<Job>> {
    static QUEUE: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    if let Some(q) = QUEUE.get() {
        return Ok(q.lock().unwrap_or_else(|e| e.into_inner()).clone());
    }
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("bb-mpi-io".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .map_err(|e| err(MPI_ERR_OTHER, format!("cannot start the MPI-IO thread: {e}")))?;
    let q = QUEUE.get_or_init(|| Mutex::new(tx));
    Ok(q.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// Runs `access` of file `f` (handle `fh`) on the I/O thread, counted in the file's accesses
/// in flight until it ends; returns its request.
pub(crate) fn submit(
    f: Arc<File>,
    fh: MPI_File,
    access: impl FnOnce(&File) -> Res<MPI_Status> + Send + 'static,
) -> Res<Arc<Pending>> {
    let pending = Pending::new(fh, None);
    let mine = pending.clone();
    f.inflight.add();
    let job: Job = Box::new(move || {
        // A panic in the move must not leave the request or the file's callers waiting.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| access(&f))).unwrap_or_else(|_| {
            Err(err(MPI_ERR_INTERN, format!("the MPI-IO thread failed an access to {}", f.name())))
        });
        mine.finish(outcome);
        f.inflight.done();
    });
    match queue() {
        Ok(q) => {
            if let Err(e) = q.send(job) {
                // No thread to run it (cannot happen while the process lives): run it here.
                (e.0)();
            }
        }
        // No thread could start: the access is done now, as MPI allows.
        Err(_) => job(),
    }
    Ok(pending)
}
