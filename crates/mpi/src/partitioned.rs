//! Partitioned communication (MPI 4.0 chapter 4): MPI_Psend_init / MPI_Precv_init make
//! persistent requests over a buffer of `partitions` parts of `count` elements; after
//! MPI_Start, the sender marks parts ready (MPI_Pready, _range, _list) and each is sent at once,
//! as its own message, while the receiver may ask whether a part has arrived (MPI_Parrived).
//!
//! Wire form: each of the sender's parts is one message on the request's communicator, source
//! and tag, holding an 8-byte header (the part's index, then the sender's number of parts, both
//! little-endian u32) and the part's packed data. The two sides may cut the buffer into
//! different numbers of parts (MPI 4.0 section 4.2.2: only the whole messages' type signatures
//! must match): sender part i is bytes i x n .. (i + 1) x n of the packed message, and the
//! receiver copies each arrival into the parts of its own that those bytes fall in, finishing a
//! part once all its bytes are there. It posts one receive (room for the whole message) when
//! started; the first arrival tells it the sender's number of parts, and it posts the others'
//! receives then. Partitioned messages share the (communicator, source, tag) space with
//! point-to-point ones.

use std::ffi::{c_int, c_void};

use billboard::{Request, SendMode};

use crate::abi::*;
use crate::datatype::{self, Dir, Layout};
use crate::error::{bad_comm, call, err, out, MpiError, Res};
use crate::request::{empty_status, invalid_request};
use crate::state::{Mpi, Req};

const HEADER: usize = 8;

/// One started instance of a partitioned request.
pub(crate) struct Partitions {
    send: bool,
    buf: usize,
    /// Elements per part, and their layout.
    count: i64,
    layout: Layout,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
    parts: usize,
    /// Messages in flight with their bytes: a sender's by part (once ready), a receiver's one
    /// per posted receive (placed by header once arrived).
    flights: Vec<Option<(Request<'static>, Vec<u8>)>>,
    /// Per part: sent (marked ready) or arrived (placed in the buffer).
    done: Vec<bool>,
    failed: Option<MpiError>,
    /// A receiver's: the communicator its receives are posted on, the sender's number of parts
    /// (told by its first message), the messages placed, and per part of its own the bytes
    /// placed so far and where they land (unpacked when the part is full).
    c: Option<billboard::Communicator>,
    theirs: Option<usize>,
    arrived: usize,
    filled: Vec<usize>,
    landing: Vec<Option<datatype::View>>,
}

impl Partitions {
    /// Starts an instance: a receiver posts its receives now; a sender sends nothing yet.
    pub unsafe fn start(m: &mut Mpi, send: bool, parts: usize, (buf, count, t, peer, tag, comm): Args) -> Res<Self> {
        let layout = datatype::layout_in(m, t)?;
        let part_bytes = layout.bytes(count)?;
        let mut p = Partitions {
            send,
            buf,
            count,
            layout,
            peer,
            tag,
            comm,
            parts,
            flights: if send { (0..parts).map(|_| None).collect() } else { Vec::new() },
            done: vec![false; parts],
            failed: None,
            c: None,
            theirs: None,
            arrived: 0,
            filled: vec![0; if send { 0 } else { parts }],
            landing: (0..if send { 0 } else { parts }).map(|_| None).collect(),
        };
        if !send && peer != MPI_PROC_NULL {
            p.c = Some(m.comm(comm).ok_or_else(|| bad_comm(comm))?.comm.clone());
            // The first message may be the sender's only part: room for the whole.
            p.post(parts * part_bytes)?;
        }
        if peer == MPI_PROC_NULL {
            p.done.iter_mut().for_each(|d| *d = !send);
        }
        Ok(p)
    }

    /// Posts a receiver's next receive, for a part of `len` bytes.
    unsafe fn post(&mut self, len: usize) -> Res {
        let c = self.c.as_ref().expect("a receiver keeps its communicator");
        let mut msg = vec![0u8; HEADER + len];
        let req =
            c.irecv_raw(msg.as_mut_ptr(), msg.len(), crate::p2p::source(self.peer)?, crate::p2p::tag_match(self.tag)?)?;
        self.flights.push(Some((req, msg)));
        Ok(())
    }

    pub fn comm(&self) -> MPI_Comm {
        self.comm
    }

    fn part_base(&self, i: usize) -> *mut c_void {
        (self.buf as *mut u8).wrapping_offset((i as i64 * self.count * self.layout.extent()) as isize).cast()
    }

    /// MPI_Pready of part `i`: packed behind its header and sent.
    unsafe fn ready(&mut self, m: &mut Mpi, i: usize) -> Res {
        if !self.send {
            return Err(err(MPI_ERR_REQUEST, "MPI_Pready on a partitioned receive (MPI_Precv_init's request)"));
        }
        let parts = self.parts;
        let done = self.done.get_mut(i).ok_or_else(|| {
            err(MPI_ERR_ARG, format!("partition {i} of a request with {parts} partitions (valid: 0 to {})", parts - 1))
        })?;
        if *done {
            return Err(err(MPI_ERR_ARG, format!("partition {i} was marked ready twice in one start")));
        }
        *done = true;
        if self.peer == MPI_PROC_NULL {
            return Ok(());
        }
        let view = datatype::view(&self.layout, self.part_base(i), self.count, Dir::Read)?;
        let mut msg = Vec::with_capacity(HEADER + view.len());
        msg.extend_from_slice(&(i as u32).to_le_bytes());
        msg.extend_from_slice(&(parts as u32).to_le_bytes());
        msg.extend_from_slice(view.bytes());
        let c = &m.comm(self.comm).ok_or_else(|| bad_comm(self.comm))?.comm;
        let to = usize::try_from(self.peer).map_err(|_| err(MPI_ERR_RANK, format!("invalid rank {}", self.peer)))?;
        let req = c.isend_raw(msg.as_ptr(), msg.len(), to, self.tag, SendMode::Standard)?;
        self.flights[i] = Some((req, msg));
        Ok(())
    }

    /// Places an arrived part of the sender's in this side's parts, by its header, and posts the
    /// receives of the sender's other parts once the first tells how many there are.
    unsafe fn place(&mut self, msg: &[u8], bytes: usize) -> Res {
        let part_bytes = self.layout.bytes(self.count)?;
        let total = self.parts * part_bytes;
        let field =
            |at: usize| msg.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
        let (index, theirs, n) = match (field(0), field(4), bytes.checked_sub(HEADER)) {
            (Some(i), Some(t), Some(n)) => (i, t, n),
            _ => {
                return Err(err(
                    MPI_ERR_TRUNCATE,
                    format!("a {bytes}-byte partitioned message from rank {}", self.peer),
                ))
            }
        };
        let fits = theirs > 0 && index < theirs && n * theirs == total && self.theirs.is_none_or(|t| t == theirs);
        if !fits {
            return Err(err(
                MPI_ERR_TRUNCATE,
                format!(
                    "partitioned message from rank {}: part {index} of {theirs}, {n} bytes, for a receive of {total} \
                     bytes in {} partitions: the whole messages differ",
                    self.peer, self.parts
                ),
            ));
        }
        if self.theirs.is_none() {
            self.theirs = Some(theirs);
            for _ in 1..theirs {
                self.post(n)?;
            }
        }
        // Bytes index x n .. (index + 1) x n of the packed message, into the parts they span.
        let (mut at, end) = (index * n, (index + 1) * n);
        while at < end {
            let (j, off) = (at / part_bytes, at % part_bytes);
            let take = (part_bytes - off).min(end - at);
            if self.landing[j].is_none() {
                self.landing[j] = Some(datatype::view(&self.layout, self.part_base(j), self.count, Dir::Write)?);
            }
            let view = self.landing[j].as_mut().expect("just made");
            view.bytes_mut()[off..off + take].copy_from_slice(&msg[HEADER + at - index * n..][..take]);
            self.filled[j] += take;
            if self.filled[j] == part_bytes {
                self.landing[j].take().expect("landing").finish(part_bytes);
                self.done[j] = true;
            }
            at += take;
        }
        self.arrived += 1;
        if self.arrived == theirs {
            // Every byte is in (parts of 0 bytes have none to wait for).
            self.done.iter_mut().for_each(|d| *d = true);
        }
        Ok(())
    }

    /// Tests every message in flight once, placing arrivals; whether the instance is complete.
    unsafe fn poll(&mut self) -> bool {
        // A first arrival posts more receives: they are tested in the same pass.
        let mut k = 0;
        while let Some(slot) = self.flights.get_mut(k) {
            k += 1;
            let Some((req, _)) = slot.as_mut() else { continue };
            let outcome = match req.test() {
                Ok(None) => continue,
                Ok(Some(s)) => Ok(s.bytes()),
                Err(e) => Err(MpiError::from(e)),
            };
            let (_, msg) = slot.take().expect("in flight");
            self.settle(outcome, &msg);
        }
        self.complete()
    }

    unsafe fn settle(&mut self, outcome: Res<usize>, msg: &[u8]) {
        let placed = match outcome {
            Ok(bytes) if !self.send => self.place(msg, bytes),
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = placed {
            self.failed.get_or_insert(e);
        }
    }

    fn complete(&self) -> bool {
        self.flights.iter().all(Option::is_none) && (self.done.iter().all(|&d| d) || self.failed.is_some())
    }

    /// Waits for every message (outside the state), then says how the instance ended.
    pub unsafe fn wait(mut self) -> Res<MPI_Status> {
        if self.send && !self.done.iter().all(|&d| d) {
            let missing = self.done.iter().position(|&d| !d).unwrap_or(0);
            self.failed.get_or_insert(err(
                MPI_ERR_REQUEST,
                format!("partitioned send completed with partition {missing} never marked ready (MPI_Pready)"),
            ));
        }
        // A first arrival posts more receives: they are waited for in the same pass.
        let mut k = 0;
        while k < self.flights.len() {
            if let Some((req, msg)) = self.flights[k].take() {
                let outcome = req.wait().map(|s| s.bytes()).map_err(MpiError::from);
                self.settle(outcome, &msg);
            }
            k += 1;
        }
        self.outcome()
    }

    /// Whether a test finds it complete (it stays in place until freed or waited for).
    pub unsafe fn test(&mut self) -> bool {
        self.poll()
    }

    pub fn outcome(&self) -> Res<MPI_Status> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(empty_status()),
        }
    }
}

/// (buffer address, elements per part, datatype, peer, tag, communicator).
pub(crate) type Args = (usize, i64, MPI_Datatype, c_int, c_int, MPI_Comm);

/// The started instance behind partitioned request `h`.
fn instance(m: &mut Mpi, h: MPI_Request) -> Res<&mut Partitions> {
    match m.request_mut(h) {
        Some(Req::Persistent { active: Some(a), .. }) => match &mut **a {
            Req::Partitioned(p) => Ok(p),
            _ => Err(err(MPI_ERR_REQUEST, "not a partitioned request")),
        },
        Some(Req::Persistent { active: None, op }) if op.partitioned() => {
            Err(err(MPI_ERR_REQUEST, "the partitioned request is not started (MPI_Start)"))
        }
        _ => Err(invalid_request(h)),
    }
}

unsafe fn init(
    function: &'static str,
    send: bool,
    partitions: c_int,
    args: Args,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    let comm = args.5;
    call(function, comm, |m| {
        if partitions < 1 {
            return Err(err(MPI_ERR_ARG, format!("{partitions} partitions: at least 1")));
        }
        m.check_info(info)?;
        *out(request, "request")? = crate::persistent::partitioned_init(m, send, partitions as usize, args)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    init("MPI_Psend_init", true, partitions, (buf as usize, count, datatype, dest, tag, comm), info, request)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    info: MPI_Info,
    request: *mut MPI_Request,
) -> c_int {
    init("MPI_Precv_init", false, partitions, (buf as usize, count, datatype, source, tag, comm), info, request)
}

/// Marks parts ready, one by one, in the order given.
unsafe fn ready(function: &'static str, request: MPI_Request, parts: impl Iterator<Item = c_int>) -> c_int {
    call(function, MPI_COMM_WORLD, |m| {
        for i in parts {
            let i = usize::try_from(i).map_err(|_| err(MPI_ERR_ARG, format!("negative partition {i}")))?;
            let p: *mut Partitions = instance(m, request)?;
            // SAFETY: the instance lives in the request table, which `ready` does not touch.
            (*p).ready(m, i)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready(partition: c_int, request: MPI_Request) -> c_int {
    ready("MPI_Pready", request, std::iter::once(partition))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) -> c_int {
    if partition_low > partition_high {
        let e = err(MPI_ERR_ARG, format!("empty range {partition_low} to {partition_high}"));
        return call("MPI_Pready_range", MPI_COMM_WORLD, |_| Err(e));
    }
    ready("MPI_Pready_range", request, partition_low..=partition_high)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pready_list(
    length: c_int,
    array_of_partitions: *const c_int,
    request: MPI_Request,
) -> c_int {
    if length < 0 || (length > 0 && array_of_partitions.is_null()) {
        let e = err(MPI_ERR_ARG, format!("a list of {length} partitions at {array_of_partitions:?}"));
        return call("MPI_Pready_list", MPI_COMM_WORLD, |_| Err(e));
    }
    // SAFETY: MPI's contract: `length` partition numbers.
    let list = if length == 0 { &[][..] } else { std::slice::from_raw_parts(array_of_partitions, length as usize) };
    ready("MPI_Pready_list", request, list.iter().copied())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) -> c_int {
    call("MPI_Parrived", MPI_COMM_WORLD, |m| {
        let flag = out(flag, "flag")?;
        let p = instance(m, request)?;
        if p.send {
            return Err(err(MPI_ERR_REQUEST, "MPI_Parrived on a partitioned send (MPI_Psend_init's request)"));
        }
        let i = usize::try_from(partition).ok().filter(|&i| i < p.parts).ok_or_else(|| {
            err(MPI_ERR_ARG, format!("partition {partition} of a request with {} partitions", p.parts))
        })?;
        p.poll();
        if let Some(e) = &p.failed {
            return Err(e.clone());
        }
        *flag = p.done[i] as c_int;
        Ok(())
    })
}
