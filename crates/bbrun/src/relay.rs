//! The relay protocol between `bbrun` (the launcher) and `bbrun --agent` on each remote host,
//! sans IO: encoders append bytes to a buffer, a [`Decoder`] takes bytes as they arrive and hands
//! back whole messages. The agent speaks it over its own stdin and stdout, which is all `ssh`
//! (or any launcher command) gives it.
//!
//! The PMI server stays in the launcher (one key-value space and one barrier for the job): the
//! agent only relays a rank's PMI lines up and the server's replies down.
//!
//! Byte by byte (integers little-endian). Each direction starts with the 8-byte magic
//! `BBrelay1` (the `1` is the protocol version), so output that is not ours (a login script
//! printing on stdout, a launcher that ran something else) is caught at once. Then frames:
//!
//! ```text
//! frame   = len u32 (bytes after this field, 1 ..= MAX_FRAME) | kind u8 | body
//! int     = u32 or i32, 4 bytes
//! bytes   = len u32 | that many bytes            (strings: UTF-8; paths, args, env: raw)
//! list<T> = count u32 | count T
//! ```
//!
//! Launcher -> agent ([`Order`]):
//!
//! ```text
//! 1 Setup      jobid bytes | secret bytes (hex) | host bytes | node_id u32 | nnodes u32 | size u32
//!              | ranks list<u32> (world ranks this agent starts) | program bytes
//!              | args list<bytes> | env list<(name bytes, value bytes)> | cwd bytes
//! 2 PmiReply   rank u32 | line bytes            (one or more whole PMI lines for that rank)
//! 3 Stdin      data bytes                       (for rank 0; the next comes after StdinTaken)
//! 4 StdinEnd                                    (close rank 0's stdin)
//! 5 Signal     signal i32                       (to every rank's process group)
//! 6 Stop                                        (the job is over: kill what is left, clean up, exit)
//! 7 Spawn      first u32 | local_base u32 | local_size u32 | Setup's fields
//! 8 Check      id u32 | program bytes | path bytes | wdir bytes
//! 9 Kill       ranks list<u32>                  (SIGKILL to these members' process groups)
//! ```
//!
//! Agent -> launcher ([`Report`]):
//!
//! ```text
//! 1 Started    rank u32 | pid u32
//! 2 Pmi        rank u32 | line bytes            (one whole PMI line)
//! 3 PmiBroken  rank u32                         (the rank sent an overlong PMI line)
//! 4 Output     rank u32 | stream u8 (1 stdout, 2 stderr) | data bytes
//! 5 OutputEnd  rank u32 | stream u8
//! 6 Exited     rank u32 | how u8 (0 exit code, 1 signal) | value i32
//! 7 StdinTaken                                  (rank 0's pipe took the last Stdin; send more)
//! 8 Failed     code i32 | message bytes         (the agent cannot go on, e.g. program not found)
//! ```
//!
//! The secret travels only here, never on a command line, where `ps` would show it.

use std::fmt;
use std::marker::PhantomData;

/// The first bytes each side sends: protocol name and version.
pub const MAGIC: &[u8; 8] = b"BBrelay1";

/// The largest frame accepted: room for a large environment in `Setup`, while a broken peer
/// cannot make us allocate without bound.
pub const MAX_FRAME: usize = 8 << 20;

/// How a rank ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// Which output stream of a rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Everything an agent needs to start its ranks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Setup {
    pub jobid: String,
    /// The job secret, hex (`BB_JOB_SECRET`).
    pub secret: String,
    /// The host's name as given to bbrun (`BB_HOST`).
    pub host: String,
    /// The host's index in the job (`BB_NODE_ID`).
    pub node_id: u32,
    /// Hosts in the job (`BB_NNODES`).
    pub nnodes: u32,
    /// Ranks in the whole job.
    pub size: u32,
    /// Variables set for the ranks on top of the agent's own environment.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// What this host runs, a part per program (several in an MPMD job: `bbrun -n 1 a : -n 2 b`),
    /// in rank order.
    pub parts: Vec<Part>,
}

/// The ranks of one program on a host.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Part {
    /// The ranks (in the job, or in the spawned group) that run it.
    pub ranks: Vec<u32>,
    pub program: Vec<u8>,
    pub args: Vec<Vec<u8>>,
    /// Where they start when it exists on the host: `-wdir`, else the launcher's folder.
    pub cwd: Vec<u8>,
    /// This program's own variables (`-env`), set over [`Setup::env`].
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Setup {
    /// How many processes the parts start.
    pub fn processes(&self) -> usize {
        self.parts.iter().map(|p| p.ranks.len()).sum()
    }
}

/// Launcher -> agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    Setup(Box<Setup>),
    /// Start processes of a spawn (MPI_Comm_spawn) here: the parts' ranks of a group of
    /// `setup.size`, launcher members `first + rank`, the `local_base`th.. of the group's
    /// `local_size` processes on this host.
    Spawn {
        first: u32,
        local_base: u32,
        local_size: u32,
        setup: Box<Setup>,
    },
    PmiReply {
        rank: usize,
        line: String,
    },
    Stdin(Vec<u8>),
    StdinEnd,
    Signal(i32),
    Stop,
    /// Whether `program` can run here, found through `path` (the PATH its processes would
    /// get), in working directory `wdir` when one is given (MPI_Comm_spawn's `wdir` info):
    /// answered by [`Report::Checked`] with the same `id`, before any process of the spawn
    /// starts anywhere.
    Check {
        id: u32,
        program: Vec<u8>,
        path: Vec<u8>,
        wdir: Vec<u8>,
    },
    /// Kill these members (of a spawn that failed: one of them ended before MPI_Init).
    Kill {
        ranks: Vec<u32>,
    },
}

/// Agent -> launcher; also what the launcher's own local ranks report, so the launcher handles
/// ranks on every host the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Started {
        rank: usize,
        pid: u32,
    },
    Pmi {
        rank: usize,
        line: String,
    },
    PmiBroken {
        rank: usize,
    },
    Output {
        rank: usize,
        stream: Stream,
        data: Vec<u8>,
    },
    OutputEnd {
        rank: usize,
        stream: Stream,
    },
    Exited {
        rank: usize,
        exit: Exit,
    },
    StdinTaken,
    Failed {
        code: i32,
        message: String,
    },
    /// The answer to [`Order::Check`] `id`: why the program cannot run here (empty: it can).
    Checked {
        id: u32,
        error: String,
    },
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The stream did not start with [`MAGIC`]; holds what came instead.
    BadMagic(Vec<u8>),
    TooLong(usize),
    UnknownKind(u8),
    /// A body shorter or longer than its kind says, or a bad enum value.
    Malformed(u8, &'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadMagic(got) => {
                let got = String::from_utf8_lossy(got);
                write!(f, "it printed {got:?} instead (a login script that writes to stdout?)")
            }
            DecodeError::TooLong(n) => write!(f, "a frame of {n} bytes (at most {MAX_FRAME} allowed)"),
            DecodeError::UnknownKind(k) => write!(f, "a frame of unknown kind {k}"),
            DecodeError::Malformed(k, why) => write!(f, "a malformed frame of kind {k}: {why}"),
        }
    }
}

/// A message of one direction.
pub trait Message: Sized {
    fn kind(&self) -> u8;
    fn encode_body(&self, out: &mut Writer<'_>);
    fn decode_body(kind: u8, body: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// Appends the magic that starts a stream.
pub fn start_stream(out: &mut Vec<u8>) {
    out.extend_from_slice(MAGIC);
}

/// Appends one frame holding `msg`.
pub fn encode<M: Message>(msg: &M, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(msg.kind());
    msg.encode_body(&mut Writer(out));
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// Splits an incoming byte stream into messages.
pub struct Decoder<M> {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed (compacted lazily).
    pos: usize,
    magic_seen: bool,
    _message: PhantomData<M>,
}

impl<M: Message> Default for Decoder<M> {
    fn default() -> Self {
        Decoder { buf: Vec::new(), pos: 0, magic_seen: false, _message: PhantomData }
    }
}

impl<M: Message> Decoder<M> {
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Whether the peer sent anything of ours yet (the magic).
    pub fn greeted(&self) -> bool {
        self.magic_seen
    }

    /// The next whole message, if one has arrived. After an error the stream is unusable.
    pub fn next(&mut self) -> Result<Option<M>, DecodeError> {
        let avail = &self.buf[self.pos..];
        if !self.magic_seen {
            let n = avail.len().min(MAGIC.len());
            if avail[..n] != MAGIC[..n] {
                return Err(DecodeError::BadMagic(avail[..avail.len().min(64)].to_vec()));
            }
            if n < MAGIC.len() {
                return Ok(None);
            }
            self.magic_seen = true;
            self.pos += MAGIC.len();
            return self.next();
        }
        let Some(len) = avail.get(..4) else { return Ok(None) };
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(DecodeError::TooLong(len));
        }
        let Some(frame) = avail.get(4..4 + len) else { return Ok(None) };
        let kind = frame[0];
        let mut reader = Reader { bytes: &frame[1..], kind };
        let msg = M::decode_body(kind, &mut reader)?;
        if !reader.bytes.is_empty() {
            return Err(DecodeError::Malformed(kind, "bytes after the last field"));
        }
        self.pos += 4 + len;
        if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        Ok(Some(msg))
    }
}

pub struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn rank(&mut self, rank: usize) {
        self.u32(rank as u32);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn list<T>(&mut self, items: &[T], mut each: impl FnMut(&mut Self, &T)) {
        self.u32(items.len() as u32);
        for item in items {
            each(self, item);
        }
    }
}

pub struct Reader<'a> {
    bytes: &'a [u8],
    kind: u8,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        if self.bytes.len() < n {
            return Err(DecodeError::Malformed(self.kind, "the frame ends inside a field"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn rank(&mut self) -> Result<usize, DecodeError> {
        Ok(self.u32()? as usize)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn string(&mut self) -> Result<String, DecodeError> {
        String::from_utf8(self.bytes()?).map_err(|_| DecodeError::Malformed(self.kind, "a string is not UTF-8"))
    }
    fn list<T>(&mut self, mut each: impl FnMut(&mut Self) -> Result<T, DecodeError>) -> Result<Vec<T>, DecodeError> {
        let n = self.u32()? as usize;
        // Every item takes at least 4 bytes: a count larger than that is a lie, not a reason
        // to reserve memory.
        let mut items = Vec::with_capacity(n.min(self.bytes.len() / 4));
        for _ in 0..n {
            items.push(each(self)?);
        }
        Ok(items)
    }
    fn stream(&mut self) -> Result<Stream, DecodeError> {
        match self.u8()? {
            1 => Ok(Stream::Stdout),
            2 => Ok(Stream::Stderr),
            _ => Err(DecodeError::Malformed(self.kind, "a stream is neither 1 (stdout) nor 2 (stderr)")),
        }
    }
}

fn encode_setup(s: &Setup, w: &mut Writer<'_>) {
    w.bytes(s.jobid.as_bytes());
    w.bytes(s.secret.as_bytes());
    w.bytes(s.host.as_bytes());
    w.u32(s.node_id);
    w.u32(s.nnodes);
    w.u32(s.size);
    encode_env(&s.env, w);
    w.list(&s.parts, |w, p| {
        w.list(&p.ranks, |w, r| w.u32(*r));
        w.bytes(&p.program);
        w.list(&p.args, |w, a| w.bytes(a));
        w.bytes(&p.cwd);
        encode_env(&p.env, w);
    });
}

fn encode_env(env: &[(Vec<u8>, Vec<u8>)], w: &mut Writer<'_>) {
    w.list(env, |w, (k, v)| {
        w.bytes(k);
        w.bytes(v);
    });
}

fn decode_setup(r: &mut Reader<'_>) -> Result<Setup, DecodeError> {
    let env = |r: &mut Reader<'_>| r.list(|r| Ok((r.bytes()?, r.bytes()?)));
    Ok(Setup {
        jobid: r.string()?,
        secret: r.string()?,
        host: r.string()?,
        node_id: r.u32()?,
        nnodes: r.u32()?,
        size: r.u32()?,
        env: env(r)?,
        parts: r.list(|r| {
            Ok(Part {
                ranks: r.list(|r| r.u32())?,
                program: r.bytes()?,
                args: r.list(|r| r.bytes())?,
                cwd: r.bytes()?,
                env: env(r)?,
            })
        })?,
    })
}

impl Message for Order {
    fn kind(&self) -> u8 {
        match self {
            Order::Setup(_) => 1,
            Order::PmiReply { .. } => 2,
            Order::Stdin(_) => 3,
            Order::StdinEnd => 4,
            Order::Signal(_) => 5,
            Order::Stop => 6,
            Order::Spawn { .. } => 7,
            Order::Check { .. } => 8,
            Order::Kill { .. } => 9,
        }
    }

    fn encode_body(&self, w: &mut Writer<'_>) {
        match self {
            Order::Setup(s) => encode_setup(s, w),
            Order::Spawn { first, local_base, local_size, setup } => {
                w.u32(*first);
                w.u32(*local_base);
                w.u32(*local_size);
                encode_setup(setup, w);
            }
            Order::PmiReply { rank, line } => {
                w.rank(*rank);
                w.bytes(line.as_bytes());
            }
            Order::Stdin(data) => w.bytes(data),
            Order::Signal(sig) => w.i32(*sig),
            Order::StdinEnd | Order::Stop => {}
            Order::Check { id, program, path, wdir } => {
                w.u32(*id);
                w.bytes(program);
                w.bytes(path);
                w.bytes(wdir);
            }
            Order::Kill { ranks } => w.list(ranks, |w, r| w.u32(*r)),
        }
    }

    fn decode_body(kind: u8, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match kind {
            1 => Order::Setup(Box::new(decode_setup(r)?)),
            7 => Order::Spawn {
                first: r.u32()?,
                local_base: r.u32()?,
                local_size: r.u32()?,
                setup: Box::new(decode_setup(r)?),
            },
            2 => Order::PmiReply { rank: r.rank()?, line: r.string()? },
            3 => Order::Stdin(r.bytes()?),
            4 => Order::StdinEnd,
            5 => Order::Signal(r.i32()?),
            6 => Order::Stop,
            8 => Order::Check { id: r.u32()?, program: r.bytes()?, path: r.bytes()?, wdir: r.bytes()? },
            9 => Order::Kill { ranks: r.list(|r| r.u32())? },
            k => return Err(DecodeError::UnknownKind(k)),
        })
    }
}

impl Message for Report {
    fn kind(&self) -> u8 {
        match self {
            Report::Started { .. } => 1,
            Report::Pmi { .. } => 2,
            Report::PmiBroken { .. } => 3,
            Report::Output { .. } => 4,
            Report::OutputEnd { .. } => 5,
            Report::Exited { .. } => 6,
            Report::StdinTaken => 7,
            Report::Failed { .. } => 8,
            Report::Checked { .. } => 9,
        }
    }

    fn encode_body(&self, w: &mut Writer<'_>) {
        let stream_byte = |s: &Stream| if *s == Stream::Stdout { 1 } else { 2 };
        match self {
            Report::Started { rank, pid } => {
                w.rank(*rank);
                w.u32(*pid);
            }
            Report::Pmi { rank, line } => {
                w.rank(*rank);
                w.bytes(line.as_bytes());
            }
            Report::PmiBroken { rank } => w.rank(*rank),
            Report::Output { rank, stream, data } => {
                w.rank(*rank);
                w.u8(stream_byte(stream));
                w.bytes(data);
            }
            Report::OutputEnd { rank, stream } => {
                w.rank(*rank);
                w.u8(stream_byte(stream));
            }
            Report::Exited { rank, exit } => {
                w.rank(*rank);
                let (how, value) = match exit {
                    Exit::Code(c) => (0, *c),
                    Exit::Signal(s) => (1, *s),
                };
                w.u8(how);
                w.i32(value);
            }
            Report::StdinTaken => {}
            Report::Failed { code, message } => {
                w.i32(*code);
                w.bytes(message.as_bytes());
            }
            Report::Checked { id, error } => {
                w.u32(*id);
                w.bytes(error.as_bytes());
            }
        }
    }

    fn decode_body(kind: u8, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match kind {
            1 => Report::Started { rank: r.rank()?, pid: r.u32()? },
            2 => Report::Pmi { rank: r.rank()?, line: r.string()? },
            3 => Report::PmiBroken { rank: r.rank()? },
            4 => Report::Output { rank: r.rank()?, stream: r.stream()?, data: r.bytes()? },
            5 => Report::OutputEnd { rank: r.rank()?, stream: r.stream()? },
            6 => {
                let rank = r.rank()?;
                let exit = match (r.u8()?, r.i32()?) {
                    (0, code) => Exit::Code(code),
                    (1, sig) => Exit::Signal(sig),
                    _ => return Err(DecodeError::Malformed(kind, "an exit is neither 0 (code) nor 1 (signal)")),
                };
                Report::Exited { rank, exit }
            }
            7 => Report::StdinTaken,
            8 => Report::Failed { code: r.i32()?, message: r.string()? },
            9 => Report::Checked { id: r.u32()?, error: r.string()? },
            k => return Err(DecodeError::UnknownKind(k)),
        })
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
