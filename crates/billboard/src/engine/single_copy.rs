//! Single copy: the receiver of a rendezvous message copies it straight out of the sender's
//! memory (`process_vm_readv`), a segment at a time, reading a gathered send's block list first;
//! when the kernel refuses, the transfer restarts as a pipeline (`pipeline.rs`).

use super::*;

impl<C: Channel> Engine<C> {
    /// Copies one segment of a rendezvous message straight from the sender's memory, so a huge
    /// copy never stalls other traffic for long. Falls back to the pipeline if the kernel refuses.
    pub(super) fn advance_single_copy(&mut self, id: ReqId) -> bool {
        let State::RecvSingleCopy { peer, addr, blocks, send_req, buf, len, done, .. } = self.core.reqs.get(id).state
        else {
            return false;
        };
        if blocks > 0 && self.core.reqs.get(id).gather.is_none() {
            // A gathered send: its block list first (where each piece lies in its memory).
            let total = match self.core.reqs.get(id).state {
                State::RecvSingleCopy { total, .. } => total,
                _ => unreachable!("request {id} is not a single copy"),
            };
            match self.read_block_list(peer, addr, blocks) {
                Ok(list) if list.iter().try_fold(0usize, |sum, b| sum.checked_add(b.1)) == Some(total) => {
                    self.core.reqs.get_mut(id).gather = Some(list)
                }
                Ok(_) => {
                    self.core
                        .malformed(peer, format_args!("an RTS whose {blocks} blocks do not hold its {total} bytes"));
                    return true;
                }
                Err(e) => {
                    self.single_copy_refused(id, peer, e);
                    return true;
                }
            }
        }
        let n = self.core.cma_segment.min(len - done);
        let req = self.core.reqs.get(id);
        let read = if let Some(remote) = &req.gather {
            let mut remote = iovecs(remote, done, n);
            let mut local = match &req.scatter {
                Some(blocks) => iovecs(blocks, done, n),
                None => vec![libc::iovec { iov_base: buf.wrapping_add(done).cast(), iov_len: n }],
            };
            self.chan.read_remote_iov(peer, &mut local, &mut remote)
        } else {
            match &req.scatter {
                Some(blocks) => {
                    let from = addr.wrapping_add(done as u64) as *mut libc::c_void;
                    let mut remote = [libc::iovec { iov_base: from, iov_len: n }];
                    self.chan.read_remote_iov(peer, &mut iovecs(blocks, done, n), &mut remote)
                }
                None => {
                    // SAFETY: the posted receive buffer holds at least `len` bytes (capped at match).
                    let dst = unsafe { std::slice::from_raw_parts_mut(buf.add(done), n) };
                    self.chan.read_remote(peer, addr.wrapping_add(done as u64), dst)
                }
            }
        };
        match read {
            Ok(()) => {
                let done = done + n;
                if done == len {
                    self.core.send_control(peer, FIN, send_req as u64, &[]);
                    self.core.reqs.complete(id);
                } else if let State::RecvSingleCopy { done: d, .. } = &mut self.core.reqs.get_mut(id).state {
                    *d = done;
                }
            }
            Err(e) => self.single_copy_refused(id, peer, e),
        }
        true
    }

    /// The sender's block list (`count` entries at `addr` in its memory), for a gathered copy.
    pub(super) fn read_block_list(&self, peer: usize, addr: u64, count: u32) -> std::io::Result<Box<[Block]>> {
        // At most one block per byte of the message (checked at the RTS), which the sender
        // holds itself; still, memory this process lacks is a refusal, not an abort.
        let mut list = Vec::new();
        list.try_reserve_exact(count as usize).map_err(std::io::Error::other)?;
        list.resize(count as usize, (std::ptr::null_mut(), 0));
        let mut list: Box<[Block]> = list.into_boxed_slice();
        let bytes = std::mem::size_of_val(&*list);
        // SAFETY: a Block is two plain words (layout pinned in scatter.rs): any bytes make one.
        let dst = unsafe { std::slice::from_raw_parts_mut(list.as_mut_ptr().cast::<u8>(), bytes) };
        self.chan.read_remote(peer, addr, dst)?;
        Ok(list)
    }

    /// The kernel refused the single copy of receive `id`: it goes on (from the start) by the
    /// pipeline, and so will later messages from `peer`.
    pub(super) fn single_copy_refused(&mut self, id: ReqId, peer: usize, e: std::io::Error) {
        let State::RecvSingleCopy { send_req, buf, len, total, .. } = self.core.reqs.get(id).state else {
            unreachable!("request {id} is not a single copy")
        };
        self.restart_by_pipeline(id, peer, send_req, buf, len, total, e);
    }

    /// Receive `id` (`cap` bytes at `buf` of a `total`-byte message) starts over by the
    /// pipeline because the kernel refused to read `peer`'s memory; so will later messages.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn restart_by_pipeline(
        &mut self,
        id: ReqId,
        peer: usize,
        send_req: u32,
        buf: *mut u8,
        cap: usize,
        total: usize,
        e: std::io::Error,
    ) {
        verbose(format_args!(
            "single copy from rank {peer} refused ({e}); using the pipelined copy through shared memory from now on"
        ));
        self.core.single_copy[peer] = false;
        let req = self.core.reqs.get_mut(id);
        req.gather = None;
        req.state = State::RecvPipeline { buf, cap, len: total, received: 0, cursor: Cursor::default() };
        self.core.send_control(peer, CTS, send_req as u64, &id.to_ne_bytes());
    }
}
