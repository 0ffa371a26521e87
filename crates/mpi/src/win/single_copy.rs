//! MPI_Win_create on one host where the pages stay private (`remap.rs` could not share them,
//! or `BB_RMA_CREATE_MAP=0`), and the regions attached to MPI_Win_create_dynamic on one host
//! (every base 0, displacements are addresses: `attached.rs` says which are attached) that
//! are not in MPI_Alloc_mem's memory file (those the origin maps, `arena.rs`): the
//! window is the program's own memory, which no other process
//! maps, so an origin puts and gets by a single copy straight between its buffer and the
//! target's window (`process_vm_writev/readv`, billboard's `cross_memory`), with no help from
//! the target. The window's synchronisation lives in a node segment with no data parts
//! (`segment.rs`, `shm_sync.rs`: lock words, fence and post/complete counts), as for windows
//! in shared memory, so a target computing outside MPI stalls no lock, put or get.
//!
//! Accumulates (and fetch-and-op, compare-and-swap) go to the target's handler (`serve.rs`),
//! which applies them under the target part's accumulate lock in the segment (`shm_sync.rs`).
//! In a passive-target epoch the origin keeps them until a flush or unlock settles them, and
//! applies those the handler has not taken after a short wait itself ([`accumulate_remote`],
//! under the same lock: `withdraw.rs`), so a target computing outside MPI stalls no
//! lock/fetch-and-op/unlock and no flush. Every synchronisation that completes operations
//! (flush, unlock, fence, complete) first waits for them, then acts on the words in the
//! segment.
//!
//! Where the kernel refuses the copy (EPERM under a strict Yama or seccomp, ENOSYS), or
//! `BB_RMA_SINGLE_COPY=0`, put and get go to the handler as accumulates do, from then on;
//! `BB_VERBOSE=1` says so once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use billboard::transport::shm::cross_memory::{copy_iov, Direction, IOV_MAX};
use billboard::Communicator;

use super::origin::Landing;
use super::segment::Segment;
use super::serve::combiner;
use super::target::{apply_data, Access, Kind, Shape};
use super::withdraw::{Outstanding, Settle};
use super::{direct, shm_sync};
use crate::abi::MPI_ERR_OP;
use crate::datatype::{view, Dir, View};
use crate::error::{err, Res};

/// Whether put and get on a created window reach a target of the same host by single copy.
pub(crate) static SINGLE_COPY: billboard::tunables::Tunable = billboard::tunables::Tunable::new(
    "BB_RMA_SINGLE_COPY",
    1,
    "MPI_Win_create on one host: put/get by process_vm_writev/readv from the origin (0: through the target's handler, as where the kernel refuses)",
);

/// Single copies (`process_vm_writev/readv` calls) this process's RMA made (MPI_T
/// `bb_rma_single_copies`).
pub(crate) static SINGLE_COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The refusal was reported (once per process, whatever the window).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Where every member's window lies, for copies straight into it.
pub(crate) struct Reach {
    /// Per member (window rank): its process id and window base address.
    peers: Vec<(libc::pid_t, usize)>,
    me: usize,
    /// The kernel refused a copy (or the tunable is 0): put and get go to the handler.
    refused: bool,
    /// Per target: accumulates sent to its handler in passive epochs, until settled.
    outstanding: Vec<Outstanding>,
}

impl Reach {
    /// The collective exchange of every member's process id and window base over `comm`
    /// (the window's communicator, whose members all run on this host).
    pub fn exchange(comm: &Communicator, base: *mut u8, seg: &Arc<Segment>) -> Res<Reach> {
        let n = comm.size();
        let mine: Vec<u8> = [std::process::id() as u64, base as u64].iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mut all = vec![0u8; 16 * n];
        let layout: Vec<(usize, usize)> = (0..n).map(|r| (16 * r, 16)).collect();
        comm.allgatherv_bytes(&mine, &mut all, &layout)?;
        let word = |i: usize| u64::from_ne_bytes(all[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let peers = (0..n).map(|r| (word(2 * r) as libc::pid_t, word(2 * r + 1) as usize)).collect();
        let refused = SINGLE_COPY.get() == 0;
        if refused {
            report(comm.rank(), "BB_RMA_SINGLE_COPY=0");
        }
        Ok(Reach {
            peers,
            me: comm.rank(),
            refused,
            outstanding: (0..n).map(|_| Outstanding::new(comm, seg)).collect(),
        })
    }

    /// Carries out put or get `a` on `target` by single copy: `data` the put's packed origin
    /// data, `result` where a get's data goes. `Ok(false)`: not done (not a put or get, or the
    /// kernel refuses): the caller sends it to the target's handler.
    ///
    /// # Safety
    /// As MPI requires of the program: the buffers hold what their datatypes and counts say;
    /// `a.target` lies inside the target's window (the origin checked it against its size).
    pub unsafe fn copy(&mut self, target: usize, a: &Access, data: &[View], result: Option<&Landing>) -> Res<bool> {
        if self.refused || !matches!(a.kind, Kind::Put | Kind::Get) {
            return Ok(false);
        }
        let (pid, base) = self.peers[target];
        if a.kind == Kind::Put {
            let bytes = data.first().map_or(&[][..], |v| v.bytes());
            if target == self.me {
                direct::put(base as *mut u8, &a.target, bytes);
            } else if let Err(e) = transfer(pid, base, a, bytes.as_ptr().cast_mut(), Direction::Write) {
                return Ok(self.refuse(target, e));
            }
            shm_sync::stored();
            return Ok(true);
        }
        let Some(l) = result else { return Ok(true) };
        // SAFETY: the program's result buffer (caller).
        let mut out = view(&l.layout, l.addr, l.count, Dir::Write)?;
        shm_sync::before_load();
        if target == self.me {
            direct::get(base as *const u8, &a.target, out.bytes_mut());
        } else if let Err(e) = transfer(pid, base, a, out.bytes_mut().as_mut_ptr(), Direction::Read) {
            return Ok(self.refuse(target, e));
        }
        let len = out.len();
        // SAFETY: the result buffer is still the program's (caller).
        out.finish(len);
        Ok(true)
    }

    /// Whether no accumulate on `target` waits to be settled (`withdraw.rs`).
    pub fn settled(&self, target: usize) -> bool {
        self.outstanding[target].ops.is_empty()
    }

    /// Member `target`'s process id.
    pub fn pid(&self, target: usize) -> u64 {
        self.peers[target].0 as u64
    }

    /// Where accumulate-type operations on `target` in a passive epoch are numbered and kept
    /// until a flush settles them (`withdraw.rs`); `None` where the kernel refuses single
    /// copies (nothing could be withdrawn: flushes ask the handler).
    pub fn track(&mut self, target: usize) -> Option<&mut Outstanding> {
        (!self.refused).then(|| &mut self.outstanding[target])
    }

    /// Accumulate-type `a` on `target` (packed origin data, then compare data, in `data`)
    /// applied at once by this origin, where a recent flush found the target away
    /// ([`Outstanding::apply_now`]); returns what it fetched. `None`: send it to the handler.
    ///
    /// # Safety
    /// `a.target` lies inside the target's window (the origin checked it against its size).
    pub unsafe fn apply_now(&mut self, seg: &Segment, target: usize, a: &Access, data: &[u8]) -> Option<Res<Vec<u8>>> {
        if self.refused {
            return None;
        }
        match self.outstanding[target].apply_now(seg, target, self.peers[target], a, data)? {
            Ok(reply) => Some(Ok(reply)),
            Err(Failure::Refused(e)) => {
                self.refuse(target, e);
                None
            }
            Err(Failure::Op(e)) => Some(Err(err(MPI_ERR_OP, e))),
        }
    }

    /// Whether operations on `target` are applied at once now (checked before building one).
    #[inline]
    pub fn direct(&self, target: usize) -> bool {
        !self.refused && self.outstanding[target].direct()
    }

    /// Every target's sends of withdrawn requests still in flight (`withdraw.rs`).
    pub fn take_limbo(&mut self) -> Vec<super::origin::Wait> {
        self.outstanding.iter_mut().flat_map(|o| o.take_limbo()).collect()
    }

    /// The targets to which withdrawn requests may still be on their way.
    pub fn stale_targets(&self) -> Vec<usize> {
        (0..self.outstanding.len()).filter(|&t| self.outstanding[t].stale()).collect()
    }

    /// The settling of `target`'s outstanding operations (none: `None`).
    pub fn settle(&mut self, target: usize) -> Option<Settle> {
        Settle::new(target, self.peers[target], &mut self.outstanding[target])
    }

    /// The kernel refused a copy to or from `target`: from now on the handler does them.
    fn refuse(&mut self, target: usize, e: std::io::Error) -> bool {
        self.refused = true;
        report(self.me, &format!("{e} (rank {target})"));
        false
    }
}

/// Why an accumulate could not be applied by single copies.
pub(crate) enum Failure {
    /// The kernel refused the copy.
    Refused(std::io::Error),
    /// The operation itself (an operator not defined on the type): the message says why.
    Op(String),
}

/// Applies accumulate-type `a` (accumulate, get-accumulate, fetch-and-op, compare-and-swap),
/// its packed origin data (then compare data) `data`, to the window of process `pid` at
/// `base`: the target bytes read by single copy, combined, and written back where they
/// changed. Returns what a get-type operation fetched (empty otherwise). Atomic to all who
/// follow MPI's rules only while no other process applies an operation there: the caller
/// holds the target part's accumulate lock.
///
/// # Safety
/// `a.target` lies inside the target's window (the origin checked it against its size).
pub(crate) unsafe fn accumulate_remote(
    pid: libc::pid_t,
    base: usize,
    a: &Access,
    data: &[u8],
) -> Result<Vec<u8>, Failure> {
    let len = a.target.bytes();
    let mut current = vec![0u8; len];
    transfer(pid, base, a, current.as_mut_ptr(), Direction::Read).map_err(Failure::Refused)?;
    let before = current.clone();
    // The same operation on the packed bytes, as one dense block.
    let dense = Shape { offset: 0, count: 1, extent: len as i64, blocks: vec![(0, len)] };
    let packed = Access { kind: a.kind, op: a.op, elem: a.elem, target: dense, data: Vec::new() };
    let mut reply = Vec::with_capacity(packed.reply_bytes());
    let mut combine = combiner(a).map_err(Failure::Op)?;
    apply_data(&mut current, &packed, data, &mut *combine, &mut reply).map_err(Failure::Op)?;
    if current != before {
        transfer(pid, base, a, current.as_mut_ptr(), Direction::Write).map_err(Failure::Refused)?;
    }
    Ok(reply)
}

/// Says once, under `BB_VERBOSE`, that created windows go through the handler.
pub(crate) fn report(me: usize, why: &str) {
    if billboard::VERBOSE.get() != 0 && !REPORTED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "billboard MPI (rank {me}): single copy to MPI_Win_create windows refused ({why}); put and get go \
             through the target's handler from now on"
        );
    }
}

/// Moves the packed bytes at `packed` to (`Write`) or from (`Read`) the places of `a`'s
/// target shape in process `pid`'s window at `base`, at most [`IOV_MAX`] places a call.
///
/// # Safety
/// `packed` holds the shape's packed size, readable (`Write`) or writable (`Read`).
unsafe fn transfer(pid: libc::pid_t, base: usize, a: &Access, packed: *mut u8, dir: Direction) -> std::io::Result<()> {
    let mut remote: Vec<libc::iovec> =
        Vec::with_capacity(a.target.count.saturating_mul(a.target.blocks.len()).min(IOV_MAX));
    let mut regions = a.target.regions().peekable();
    let mut done = 0usize;
    while regions.peek().is_some() {
        remote.clear();
        remote.extend(
            regions
                .by_ref()
                .take(IOV_MAX)
                .map(|(at, len)| libc::iovec { iov_base: base.wrapping_add(at) as *mut libc::c_void, iov_len: len }),
        );
        let len: usize = remote.iter().map(|v| v.iov_len).sum();
        let mut local = [libc::iovec { iov_base: packed.add(done).cast(), iov_len: len }];
        SINGLE_COPIES.fetch_add(1, Ordering::Relaxed);
        copy_iov(pid, &mut local, &mut remote, dir)?;
        done += len;
    }
    Ok(())
}
