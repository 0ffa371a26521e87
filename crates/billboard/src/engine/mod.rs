//! Messages: envelopes, matching, protocols, requests, progress.

mod claims;
pub(crate) mod ladder;
pub mod matching;
mod pipeline;
mod progress;
pub mod progress_thread;
pub mod protocol;
mod rendezvous;
pub mod request;
pub mod scatter;
pub(crate) mod sched;
mod shared_copy;
mod single_copy;
pub mod traffic;
mod wait;

pub(crate) use progress::{active, revoke::TAG_SURVIVES_REVOKE, Engine, Pending, Started};
pub use progress::{ActiveHandler, ActiveMessage, Outbox, HANDLER_MAX, HEADER_MAX};

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::Result;

/// The engine of this process, shared by its communicators and requests (and threads).
///
/// One lock serializes the engine (MPI_THREAD_MULTIPLE); a waiting thread holds it only
/// while it polls, never while it spins, yields or sleeps, so other threads' operations go on.
/// A process that promises never to call in from two threads at once (MPI below
/// MPI_THREAD_MULTIPLE, see [`Shared::assume_serialized`]) skips the lock: its two atomic
/// operations per call are a fair share of a small message's cost.
pub(crate) struct Shared {
    engine: UnsafeCell<Engine>,
    lock: Mutex<()>,
    serialized: AtomicBool,
    /// Operations in flight hold the engine by a plain pointer, not a counted reference
    /// ([`Shared::assume_operations_end_first`]).
    uncounted: AtomicBool,
    /// The library's own threads now running ([`Shared::spawn_helper`]), and whether calls
    /// were serialized before the first of them started (then they are again after the last).
    helpers: Mutex<(usize, bool)>,
    /// Threads waiting at once (MPI_THREAD_MULTIPLE): which one polls, where the others sleep.
    waiters: wait::Waiters,
    /// The host index of every peer (read without the engine's lock; it changes only when
    /// processes join, `add_tcp_peers`).
    nodes: std::sync::RwLock<Arc<[usize]>>,
    /// Per peer number: how many times it was released ([`Shared::release_peers`]), so a
    /// process that held it before and the one that holds it now are told apart (a group kept
    /// from a disconnected communicator must not name the next process to join).
    generations: std::sync::RwLock<Vec<u32>>,
    /// Ranks of this process's own job; peers from this number on joined later.
    world_size: usize,
    /// Ranks outnumber cores on this host (a setup fact, readable without the lock).
    crowded: bool,
    /// The revoked contexts (`revoke.rs`), readable without the lock.
    revoked: Arc<progress::revoke::Revoked>,
}

// SAFETY: the engine is only reached through `lock`, which holds the mutex unless the process
// promised (unsafely) that calls never overlap; `Engine` itself is `Send`.
unsafe impl Sync for Shared {}

/// The engine, held for one step (the mutex guard, when there is one, is released on drop).
pub(crate) struct EngineGuard<'a> {
    engine: &'a mut Engine,
    _held: Option<MutexGuard<'a, ()>>,
}

impl std::ops::Deref for EngineGuard<'_> {
    type Target = Engine;
    #[inline]
    fn deref(&self) -> &Engine {
        self.engine
    }
}

impl std::ops::DerefMut for EngineGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Engine {
        self.engine
    }
}

pub(crate) type EngineRef = Arc<Shared>;

impl Shared {
    /// The host index of every world rank (equal index: same host), as the routes found it.
    pub fn nodes(&self) -> Arc<[usize]> {
        Arc::clone(&self.nodes.read().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// The ranks of this process's own job (MPI_COMM_WORLD); peers numbered from here on
    /// joined later (spawn, connect, accept).
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// Joins peers of another job to this engine over TCP (see `Routes::add_tcp_peers`);
    /// returns their peer numbers (released ones are taken again).
    pub(crate) fn add_tcp_peers(
        &self,
        hosts: Vec<String>,
        node: Vec<usize>,
        established: Vec<(usize, std::os::fd::OwnedFd, Vec<u8>)>,
    ) -> Result<Vec<usize>> {
        let mut engine = self.lock();
        let numbers = engine.add_tcp_peers(hosts, node, established)?;
        let nodes: Arc<[usize]> = engine.routes().nodes().into();
        let mut generations = self.generations.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        // A released number keeps its generation (bumped at release); a new one starts at 0.
        let known = generations.len().max(nodes.len());
        generations.resize(known, 0);
        *self.nodes.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = nodes;
        Ok(numbers)
    }

    /// Closes the connections to `peers` (joined by `add_tcp_peers`), once no communicator uses
    /// them (see `api::dynamic::JoinedPeers`); their numbers go to the next peers to join.
    pub(crate) fn release_peers(&self, peers: &[usize]) {
        self.lock().release_peers(peers);
        let mut generations = self.generations.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        for &p in peers {
            if let Some(g) = generations.get_mut(p) {
                *g = g.wrapping_add(1);
            }
        }
    }

    /// Which process holds peer number `peer` now (see [`crate::Process`]).
    pub(crate) fn generation(&self, peer: usize) -> u32 {
        self.generations.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(peer).copied().unwrap_or(0)
    }

    /// What this process exchanged with each peer so far (index: world rank, then joined peers).
    pub(crate) fn traffic(&self) -> Vec<traffic::Traffic> {
        self.lock().traffic().to_vec()
    }

    /// The system calls of this process's waits so far (yields, socket receives).
    pub(crate) fn wait_calls(&self) -> traffic::WaitCalls {
        self.lock().wait_calls()
    }

    /// Messages that arrived before a receive was posted for them, waiting now.
    pub(crate) fn unexpected_messages(&self) -> usize {
        self.lock().unexpected_messages()
    }

    /// Whether ranks outnumber cores on this host, as [`Engine::oversubscribed`] says.
    pub(crate) fn crowded(&self) -> bool {
        self.crowded
    }

    /// Whether `context` belongs to a revoked communicator, without the engine's lock.
    #[inline]
    pub(crate) fn is_revoked(&self, context: u32) -> bool {
        self.revoked.contains(context)
    }

    /// Whether any context was revoked (see [`Shared::is_revoked`]).
    pub(crate) fn any_revoked(&self) -> bool {
        self.revoked.any()
    }

    pub fn new(engine: Engine) -> EngineRef {
        let nodes: Arc<[usize]> = engine.routes().nodes().into();
        Arc::new(Shared {
            world_size: nodes.len(),
            generations: std::sync::RwLock::new(vec![0; nodes.len()]),
            nodes: std::sync::RwLock::new(nodes),
            crowded: engine.oversubscribed(),
            revoked: engine.revoked(),
            engine: UnsafeCell::new(engine),
            lock: Mutex::new(()),
            serialized: AtomicBool::new(false),
            uncounted: AtomicBool::new(false),
            helpers: Mutex::new((0, false)),
            waiters: wait::Waiters::default(),
        })
    }

    /// The engine, for one short step. A thread that panicked inside leaves it usable: the
    /// engine's own state is never left half-updated by a panic in user code.
    #[inline]
    pub fn lock(&self) -> EngineGuard<'_> {
        let held = if self.serialized.load(Ordering::Relaxed) {
            None
        } else {
            Some(self.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
        };
        // SAFETY: exclusive: the mutex is held, or the process promised calls never overlap
        // (`assume_serialized`); no code path takes the engine twice in one thread.
        EngineGuard { engine: unsafe { &mut *self.engine.get() }, _held: held }
    }

    /// From now on the engine skips its lock.
    ///
    /// # Safety
    /// No two threads of this process call into the library at once from now on, and one
    /// thread's calls happen-before another's (MPI_THREAD_SERIALIZED's rule). Call it while no
    /// other thread uses the library.
    pub unsafe fn assume_serialized(&self) {
        self.serialized.store(true, Ordering::Relaxed);
    }

    /// Whether calls never overlap ([`Shared::assume_serialized`], no library thread running).
    #[inline]
    pub(crate) fn serialized(&self) -> bool {
        self.serialized.load(Ordering::Relaxed)
    }

    /// From now on requests and collectives hold the engine by a plain pointer instead of a
    /// counted reference: starting and finishing one then costs no atomic operation (each
    /// drains the store buffer, and so waits for the stores of the message just posted).
    ///
    /// # Safety
    /// Every request and collective started from now on is dropped before the last handle of
    /// the engine (universe or communicator) is.
    pub unsafe fn assume_operations_end_first(&self) {
        self.uncounted.store(true, Ordering::Relaxed);
    }

    /// Runs `work` on a thread of the library's own (a nonblocking operation that is a
    /// sequence of blocking steps, like a communicator's creation), which ends when `work`
    /// does. While such a thread runs, every call takes the engine's lock, even in a process
    /// that promised serialized calls: the promise covers the program's threads, not ours.
    pub(crate) fn spawn_helper<T: Send + 'static>(
        self: &Arc<Self>,
        name: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Helper<T>> {
        {
            let mut h = self.helpers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if h.0 == 0 {
                // Our caller is the only thread in the library (or the lock is already on).
                h.1 = self.serialized.swap(false, Ordering::Relaxed);
            }
            h.0 += 1;
        }
        match std::thread::Builder::new().name(name.into()).spawn(work) {
            Ok(thread) => Ok(Helper { thread: Some(thread), shared: self.clone() }),
            Err(e) => {
                self.helper_ended();
                Err(crate::Error::Os { call: "spawning a library thread", errno: e })
            }
        }
    }

    fn helper_ended(&self) {
        let mut h = self.helpers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        h.0 -= 1;
        if h.0 == 0 && h.1 {
            // Joined by a call of the program's, the only one in the library at this moment.
            self.serialized.store(true, Ordering::Relaxed);
        }
    }

    /// Waits until request `id` completes, then frees it.
    pub fn wait(&self, id: request::ReqId) -> Result<request::Completion> {
        let engine = self.lock();
        self.wait_on(engine, id)
    }

    fn wait_on<'a>(&'a self, engine: EngineGuard<'a>, id: request::ReqId) -> Result<request::Completion> {
        if engine.is_done(id) {
            let mut engine = engine;
            return engine.finish(id);
        }
        let hint = engine.hint(id);
        self.wait_locked(engine, hint, |e| e.is_done(id)).finish(id)
    }

    /// A blocking receive into `cap` bytes at `buf` (see [`Engine::recv_direct`]).
    ///
    /// # Safety
    /// `buf..buf+cap` is valid for writes, and untouched by others, for the whole call.
    #[inline]
    pub unsafe fn recv(
        &self,
        pattern: matching::Pattern,
        hint: Option<usize>,
        buf: *mut u8,
        cap: usize,
    ) -> Result<request::Completion> {
        let mut engine = self.lock();
        match engine.recv_direct(pattern, hint, buf, cap) {
            Started::Request(id) => self.wait_on(engine, id),
            Started::Direct => self.wait_locked(engine, hint, |e| e.direct_taken()).direct_finish(),
        }
    }
}

/// The engine as an operation in flight (a request, a collective) holds it: a counted
/// reference, or a plain pointer where the process promised that operations end first
/// ([`Shared::assume_operations_end_first`]).
pub(crate) struct EngineLink {
    shared: NonNull<Shared>,
    counted: bool,
}

// SAFETY: it stands for an `Arc<Shared>` (or a borrow the process vouches for), and `Shared`
// is `Sync`.
unsafe impl Send for EngineLink {}
unsafe impl Sync for EngineLink {}

impl EngineLink {
    pub(crate) fn new(engine: &EngineRef) -> EngineLink {
        let counted = !engine.uncounted.load(Ordering::Relaxed);
        if counted {
            // SAFETY: `engine` is a live Arc; `drop` gives the count back.
            unsafe { Arc::increment_strong_count(Arc::as_ptr(engine)) };
        }
        EngineLink { shared: NonNull::from(&**engine), counted }
    }
}

impl std::ops::Deref for EngineLink {
    type Target = Shared;
    #[inline]
    fn deref(&self) -> &Shared {
        // SAFETY: alive: this link holds a count, or the process promised the engine outlives it.
        unsafe { self.shared.as_ref() }
    }
}

impl Drop for EngineLink {
    #[inline]
    fn drop(&mut self) {
        if self.counted {
            // SAFETY: the count taken in `new`.
            unsafe { Arc::decrement_strong_count(self.shared.as_ptr()) };
        }
    }
}

/// A thread of the library's own ([`Shared::spawn_helper`]). Dropping it waits for it.
pub(crate) struct Helper<T> {
    thread: Option<std::thread::JoinHandle<T>>,
    shared: EngineRef,
}

impl<T> Helper<T> {
    /// Whether the work has ended ([`Helper::join`] then returns at once).
    pub(crate) fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Waits for the work to end and hands over its result.
    pub(crate) fn join(mut self) -> T {
        let thread = self.thread.take().expect("a helper is joined once");
        let outcome = thread.join();
        self.shared.helper_ended();
        outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl<T> Drop for Helper<T> {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
            self.shared.helper_ended();
        }
    }
}
