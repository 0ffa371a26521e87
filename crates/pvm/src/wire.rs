//! What tasks and host agents say to each other (on Unix sockets, TCP, and the pipes between
//! agents), byte by byte.
//!
//! Every frame is `u32 LE length` of the body, then the body: one kind byte, then the kind's
//! fields in order. Fields: `i32` as 4 bytes little-endian; a string or byte run as a `u32 LE`
//! length then its bytes; a list as a `u32 LE` count then its items. Decoding checks every
//! length against what arrived: bytes from another process never panic, they fail that
//! connection with a [`WireError`].

use std::fmt;

pub use crate::frame_buffer::FrameBuffer;

/// A frame's body may not exceed this (1 GiB): a length beyond it is a broken peer.
pub const MAX_FRAME: usize = 1 << 30;

/// What an `Output` frame says: a line, or the start or end of a child's output.
pub const OUTPUT_LINE: i32 = 0;
pub const OUTPUT_BEGIN: i32 = 1;
pub const OUTPUT_EOF: i32 = 2;

/// A task as `pvm_tasks` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEntry {
    pub tid: i32,
    pub ptid: i32,
    pub host: i32,
    pub flag: i32,
    pub name: String,
    pub pid: i32,
}

/// A host as `pvm_config` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEntry {
    pub tid: i32,
    pub name: String,
    pub arch: String,
    pub speed: i32,
    pub dsig: i32,
}

/// A spawn request: `pvm_spawn`'s arguments and what the child inherits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnRequest {
    pub file: String,
    pub argv: Vec<String>,
    pub flags: i32,
    pub place: String,
    pub count: i32,
    /// Folders to look for `file` in (the spawner's `PVM_PATH`, or PVM's default).
    pub path: Vec<String>,
    /// `NAME=value` pairs the spawner exports (`PVM_EXPORT`).
    pub env: Vec<String>,
    pub cwd: String,
    /// Where the children's output goes as messages (`PvmOutputTid`, `PvmOutputCode`,
    /// `PvmOutputContext` at the spawn): `[tid, tag, context]`, tid 0 for none.
    pub output: [i32; 3],
}

/// One frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// First frame on every connection: the job secret, the sender's pid, the tid it was
    /// given at spawn (0: none, a program started from a shell), its program name.
    Hello {
        secret: String,
        pid: i32,
        tid: i32,
        name: String,
    },
    /// The agent's answer to `Hello`: the task's tid, parent (or `PvmNoParent`), siblings.
    Welcome {
        tid: i32,
        ptid: i32,
        siblings: Vec<i32>,
    },
    /// A PVM message, task to task (or from the agent: notifications).
    Message {
        src: i32,
        tag: i32,
        ctx: i32,
        enc: i32,
        data: Vec<u8>,
    },
    /// A large PVM message left in the sender's memory for the receiver to copy once
    /// (`single_copy.rs`): its pieces as (address, length) in the sender, in order, and the
    /// sequence number the receiver acknowledges in the ring when it is done reading them.
    /// Only on a ring route, after the receiver allowed it.
    Remote {
        tag: i32,
        ctx: i32,
        enc: i32,
        seq: u64,
        pieces: Vec<(u64, u64)>,
    },
    /// Output of a child whose parent called `pvm_catchout`: a line (`OUTPUT_LINE`, newline
    /// stripped), or where the child's output begins or ends (`OUTPUT_BEGIN`, `OUTPUT_EOF`).
    Output {
        tid: i32,
        event: i32,
        text: Vec<u8>,
    },
    Spawn(SpawnRequest),
    /// The spawned tids, or an error code in place of each task that did not start.
    Spawned {
        tids: Vec<i32>,
    },
    /// A signal for a task (`pvm_kill`: SIGTERM, `pvm_sendsig`: any).
    Kill {
        tid: i32,
        sig: i32,
    },
    Notify {
        what: i32,
        tag: i32,
        tids: Vec<i32>,
    },
    Config,
    ConfigIs {
        hosts: Vec<HostEntry>,
    },
    Tasks {
        which: i32,
    },
    TasksAre {
        tasks: Vec<TaskEntry>,
    },
    /// Whether `tid` is a live task (or one still starting).
    Lookup {
        tid: i32,
    },
    CatchOut {
        on: i32,
    },
    Halt,
    /// The task leaves PVM (`pvm_exit`).
    Exit,
    /// A group call: `op` (see `groups.rs`), the group, an argument.
    Group {
        op: i32,
        name: String,
        arg: i32,
    },
    /// Message box (`mailbox.rs`): store the message in class `name`.
    MboxPut {
        name: String,
        flags: i32,
        enc: i32,
        data: Vec<u8>,
    },
    /// Read an entry: answered by an `MboxEntry`, or a `Status` error.
    MboxGet {
        name: String,
        index: i32,
        flags: i32,
    },
    MboxEntry {
        owner: i32,
        enc: i32,
        data: Vec<u8>,
    },
    MboxDel {
        name: String,
        index: i32,
    },
    MboxList {
        pattern: String,
    },
    /// Classes by name, each with (index, owner, flags) of its entries.
    MboxClasses {
        classes: Vec<crate::mailbox::ClassInfo>,
    },
    /// `pvm_addhosts` / `pvm_delhosts`: answered by a `Status` whose list holds each host's
    /// tid (0 for a deletion) or error code.
    AddHosts {
        names: Vec<String>,
    },
    DelHosts {
        names: Vec<String>,
    },
    /// Task to agent, after `Welcome`: where other hosts' tasks reach it over TCP
    /// (`ip:port`, empty where it offers none). No answer.
    Listening {
        addr: String,
    },
    /// Where task `tid` (on another host) listens: `At`, `Status` 2 while it starts, or an
    /// error.
    Where {
        tid: i32,
    },
    At {
        addr: String,
    },
    /// Host agents among themselves (`agent_hosts.rs`), on the launcher command's stdin and
    /// stdout. `Join`: the first agent's order to a new one, to serve `dir` as host
    /// `host_tid`; `Joined`: it does.
    Join {
        secret: String,
        host_tid: i32,
        name: String,
        dir: String,
    },
    Joined {
        pid: i32,
    },
    /// A task of the new host said hello (its parent, as the new host knows it).
    Enrolled {
        tid: i32,
        ptid: i32,
        pid: i32,
        name: String,
    },
    /// A task of the new host ended.
    Gone {
        tid: i32,
    },
    /// A frame from (upwards) or for (downwards) task `tid` of the new host.
    Relay {
        tid: i32,
        frame: Box<Frame>,
    },
    /// A request of task `from` of the new host, for the first agent to answer.
    Request {
        from: i32,
        frame: Box<Frame>,
    },
    /// Start `req` as the reserved `tids` of the new host for `from` (`catch`: the parent
    /// catches their output); answered by `Started` with the same `id`.
    SpawnAt {
        id: i32,
        from: i32,
        catch: i32,
        tids: Vec<i32>,
        req: SpawnRequest,
    },
    Started {
        id: i32,
        tids: Vec<i32>,
    },
    /// `pvm_hostsync`: the time of day on host `host`, task to agent (`id` 0); first agent
    /// to added host `host`'s agent, for its own clock. Answered by `ClockIs` (same `id`).
    HostClock {
        host: i32,
        id: i32,
    },
    /// A host's time of day: microseconds since the epoch.
    ClockIs {
        id: i32,
        micros: u64,
    },
    /// The answer to most requests: a value or an error code.
    Status {
        code: i32,
        list: Vec<i32>,
    },
}

/// A frame that does not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn int(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }
    fn ints(&mut self, v: &[i32]) -> &mut Self {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        for &x in v {
            self.int(x);
        }
        self
    }
    fn strs(&mut self, v: &[String]) -> &mut Self {
        self.0.extend_from_slice(&(v.len() as u32).to_le_bytes());
        for s in v {
            self.str(s);
        }
        self
    }
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(WireError(format!("a frame ends early: {} bytes wanted, {} left", n, self.b.len())));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn int(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn len(&mut self) -> Result<usize, WireError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, WireError> {
        let n = self.len()?;
        Ok(self.take(n)?.to_vec())
    }
    fn str(&mut self) -> Result<String, WireError> {
        String::from_utf8(self.bytes()?).map_err(|_| WireError("a string that is not UTF-8".into()))
    }
    fn ints(&mut self) -> Result<Vec<i32>, WireError> {
        let n = self.len()?;
        if n > self.b.len() / 4 {
            return Err(WireError(format!("a list of {n} ints in a frame of {} bytes", self.b.len())));
        }
        (0..n).map(|_| self.int()).collect()
    }
    fn strs(&mut self) -> Result<Vec<String>, WireError> {
        let n = self.len()?;
        if n > self.b.len() / 4 {
            return Err(WireError(format!("a list of {n} strings in a frame of {} bytes", self.b.len())));
        }
        (0..n).map(|_| self.str()).collect()
    }
}

impl Frame {
    /// The frame with its length prefix, ready to write.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(vec![0; 4]);
        match self {
            Frame::Hello { secret, pid, tid, name } => w.int(1).str(secret).int(*pid).int(*tid).str(name),
            Frame::Welcome { tid, ptid, siblings } => w.int(2).int(*tid).int(*ptid).ints(siblings),
            Frame::Message { src, tag, ctx, enc, data } => w.int(3).int(*src).int(*tag).int(*ctx).int(*enc).bytes(data),
            Frame::Remote { tag, ctx, enc, seq, pieces } => {
                w.int(25).int(*tag).int(*ctx).int(*enc).u64(*seq).int(pieces.len() as i32);
                for &(at, len) in pieces {
                    w.u64(at).u64(len);
                }
                &mut w
            }
            Frame::Output { tid, event, text } => w.int(4).int(*tid).int(*event).bytes(text),
            Frame::Spawn(s) => w
                .int(5)
                .str(&s.file)
                .strs(&s.argv)
                .int(s.flags)
                .str(&s.place)
                .int(s.count)
                .strs(&s.path)
                .strs(&s.env)
                .str(&s.cwd)
                .int(s.output[0])
                .int(s.output[1])
                .int(s.output[2]),
            Frame::Spawned { tids } => w.int(6).ints(tids),
            Frame::Kill { tid, sig } => w.int(7).int(*tid).int(*sig),
            Frame::Notify { what, tag, tids } => w.int(8).int(*what).int(*tag).ints(tids),
            Frame::Config => w.int(9),
            Frame::ConfigIs { hosts } => {
                w.int(10).int(hosts.len() as i32);
                for h in hosts {
                    w.int(h.tid).str(&h.name).str(&h.arch).int(h.speed).int(h.dsig);
                }
                &mut w
            }
            Frame::Tasks { which } => w.int(11).int(*which),
            Frame::TasksAre { tasks } => {
                w.int(12).int(tasks.len() as i32);
                for t in tasks {
                    w.int(t.tid).int(t.ptid).int(t.host).int(t.flag).str(&t.name).int(t.pid);
                }
                &mut w
            }
            Frame::Lookup { tid } => w.int(13).int(*tid),
            Frame::CatchOut { on } => w.int(14).int(*on),
            Frame::Halt => w.int(15),
            Frame::Exit => w.int(16),
            Frame::Group { op, name, arg } => w.int(17).int(*op).str(name).int(*arg),
            Frame::Status { code, list } => w.int(18).int(*code).ints(list),
            Frame::AddHosts { names } => w.int(26).strs(names),
            Frame::DelHosts { names } => w.int(27).strs(names),
            Frame::Listening { addr } => w.int(28).str(addr),
            Frame::Where { tid } => w.int(29).int(*tid),
            Frame::At { addr } => w.int(30).str(addr),
            Frame::Join { secret, host_tid, name, dir } => w.int(31).str(secret).int(*host_tid).str(name).str(dir),
            Frame::Joined { pid } => w.int(32).int(*pid),
            Frame::Enrolled { tid, ptid, pid, name } => w.int(33).int(*tid).int(*ptid).int(*pid).str(name),
            Frame::Gone { tid } => w.int(34).int(*tid),
            Frame::Relay { tid, frame } => w.int(35).int(*tid).bytes(&frame.encode()[4..]),
            Frame::SpawnAt { id, from, catch, tids, req } => {
                w.int(36).int(*id).int(*from).int(*catch).ints(tids).bytes(&Frame::Spawn(req.clone()).encode()[4..])
            }
            Frame::Started { id, tids } => w.int(37).int(*id).ints(tids),
            Frame::HostClock { host, id } => w.int(39).int(*host).int(*id),
            Frame::ClockIs { id, micros } => w.int(40).int(*id).u64(*micros),
            Frame::Request { from, frame } => w.int(38).int(*from).bytes(&frame.encode()[4..]),
            Frame::MboxPut { name, flags, enc, data } => w.int(19).str(name).int(*flags).int(*enc).bytes(data),
            Frame::MboxGet { name, index, flags } => w.int(20).str(name).int(*index).int(*flags),
            Frame::MboxEntry { owner, enc, data } => w.int(24).int(*owner).int(*enc).bytes(data),
            Frame::MboxDel { name, index } => w.int(21).str(name).int(*index),
            Frame::MboxList { pattern } => w.int(22).str(pattern),
            Frame::MboxClasses { classes } => {
                w.int(23).int(classes.len() as i32);
                for (name, entries) in classes {
                    w.str(name).int(entries.len() as i32);
                    for &(i, o, f) in entries {
                        w.int(i).int(o).int(f);
                    }
                }
                &mut w
            }
        };
        let len = (w.0.len() - 4) as u32;
        w.0[..4].copy_from_slice(&len.to_le_bytes());
        w.0
    }

    /// Decodes one body (without its length prefix).
    pub fn decode(body: &[u8]) -> Result<Frame, WireError> {
        let mut r = Reader { b: body };
        let kind = r.int()?;
        let f = match kind {
            1 => Frame::Hello { secret: r.str()?, pid: r.int()?, tid: r.int()?, name: r.str()? },
            2 => Frame::Welcome { tid: r.int()?, ptid: r.int()?, siblings: r.ints()? },
            3 => Frame::Message { src: r.int()?, tag: r.int()?, ctx: r.int()?, enc: r.int()?, data: r.bytes()? },
            25 => {
                let (tag, ctx, enc, seq, n) = (r.int()?, r.int()?, r.int()?, r.u64()?, r.len()?);
                if n > r.b.len() / 16 {
                    return Err(WireError(format!("a list of {n} pieces in a frame of {} bytes", body.len())));
                }
                let pieces = (0..n).map(|_| Ok((r.u64()?, r.u64()?))).collect::<Result<Vec<_>, WireError>>()?;
                let total = pieces.iter().try_fold(0u64, |t, &(_, l)| t.checked_add(l));
                if total.is_none_or(|t| t > MAX_FRAME as u64) {
                    return Err(WireError(format!("a single-copy message of {total:?} bytes (at most {MAX_FRAME})")));
                }
                Frame::Remote { tag, ctx, enc, seq, pieces }
            }
            4 => Frame::Output { tid: r.int()?, event: r.int()?, text: r.bytes()? },
            5 => Frame::Spawn(SpawnRequest {
                file: r.str()?,
                argv: r.strs()?,
                flags: r.int()?,
                place: r.str()?,
                count: r.int()?,
                path: r.strs()?,
                env: r.strs()?,
                cwd: r.str()?,
                output: [r.int()?, r.int()?, r.int()?],
            }),
            6 => Frame::Spawned { tids: r.ints()? },
            7 => Frame::Kill { tid: r.int()?, sig: r.int()? },
            8 => Frame::Notify { what: r.int()?, tag: r.int()?, tids: r.ints()? },
            9 => Frame::Config,
            10 => {
                let n = r.len()?;
                let mut hosts = Vec::new();
                for _ in 0..n.min(body.len()) {
                    hosts.push(HostEntry {
                        tid: r.int()?,
                        name: r.str()?,
                        arch: r.str()?,
                        speed: r.int()?,
                        dsig: r.int()?,
                    });
                }
                Frame::ConfigIs { hosts }
            }
            11 => Frame::Tasks { which: r.int()? },
            12 => {
                let n = r.len()?;
                let mut tasks = Vec::new();
                for _ in 0..n.min(body.len()) {
                    tasks.push(TaskEntry {
                        tid: r.int()?,
                        ptid: r.int()?,
                        host: r.int()?,
                        flag: r.int()?,
                        name: r.str()?,
                        pid: r.int()?,
                    });
                }
                Frame::TasksAre { tasks }
            }
            13 => Frame::Lookup { tid: r.int()? },
            14 => Frame::CatchOut { on: r.int()? },
            15 => Frame::Halt,
            16 => Frame::Exit,
            17 => Frame::Group { op: r.int()?, name: r.str()?, arg: r.int()? },
            18 => Frame::Status { code: r.int()?, list: r.ints()? },
            26 => Frame::AddHosts { names: r.strs()? },
            27 => Frame::DelHosts { names: r.strs()? },
            28 => Frame::Listening { addr: r.str()? },
            29 => Frame::Where { tid: r.int()? },
            30 => Frame::At { addr: r.str()? },
            31 => Frame::Join { secret: r.str()?, host_tid: r.int()?, name: r.str()?, dir: r.str()? },
            32 => Frame::Joined { pid: r.int()? },
            33 => Frame::Enrolled { tid: r.int()?, ptid: r.int()?, pid: r.int()?, name: r.str()? },
            34 => Frame::Gone { tid: r.int()? },
            35 | 38 => {
                let tid = r.int()?;
                let inner = Frame::decode(&r.bytes()?)?;
                if matches!(inner, Frame::Relay { .. } | Frame::Request { .. }) {
                    return Err(WireError("a frame for a task inside another".into()));
                }
                let frame = Box::new(inner);
                if kind == 35 {
                    Frame::Relay { tid, frame }
                } else {
                    Frame::Request { from: tid, frame }
                }
            }
            36 => {
                let (id, from, catch, tids) = (r.int()?, r.int()?, r.int()?, r.ints()?);
                let Frame::Spawn(req) = Frame::decode(&r.bytes()?)? else {
                    return Err(WireError("a SpawnAt without its spawn request".into()));
                };
                Frame::SpawnAt { id, from, catch, tids, req }
            }
            37 => Frame::Started { id: r.int()?, tids: r.ints()? },
            39 => Frame::HostClock { host: r.int()?, id: r.int()? },
            40 => Frame::ClockIs { id: r.int()?, micros: r.u64()? },
            19 => Frame::MboxPut { name: r.str()?, flags: r.int()?, enc: r.int()?, data: r.bytes()? },
            20 => Frame::MboxGet { name: r.str()?, index: r.int()?, flags: r.int()? },
            24 => Frame::MboxEntry { owner: r.int()?, enc: r.int()?, data: r.bytes()? },
            21 => Frame::MboxDel { name: r.str()?, index: r.int()? },
            22 => Frame::MboxList { pattern: r.str()? },
            23 => {
                let n = r.len()?;
                let mut classes = Vec::new();
                for _ in 0..n.min(body.len()) {
                    let name = r.str()?;
                    let m = r.len()?;
                    let mut entries = Vec::new();
                    for _ in 0..m.min(body.len()) {
                        entries.push((r.int()?, r.int()?, r.int()?));
                    }
                    classes.push((name, entries));
                }
                Frame::MboxClasses { classes }
            }
            k => return Err(WireError(format!("a frame of unknown kind {k}"))),
        };
        if !r.b.is_empty() {
            return Err(WireError(format!("{} bytes after a frame of kind {kind}", r.b.len())));
        }
        Ok(f)
    }
}

/// The bytes of a `Frame::Message` up to its data, so that a send writes the header and the
/// caller's data without copying them together. `None` for data beyond [`MAX_FRAME`].
pub fn message_header(src: i32, tag: i32, ctx: i32, enc: i32, len: usize) -> Option<[u8; 28]> {
    let words = message_words(src, tag, ctx, enc, len)?;
    let mut h = [0u8; 28];
    for (i, v) in words.iter().enumerate() {
        h[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    Some(h)
}

/// [`message_header`] as its seven 32-bit words (each to be stored little-endian): the
/// frame's length after its first word, its kind, source, tag, context, encoding, and the
/// data's length. For a writer that stores them straight where they go
/// (`Ring::write_small_message`).
#[inline(always)]
pub fn message_words(src: i32, tag: i32, ctx: i32, enc: i32, len: usize) -> Option<[i32; 7]> {
    if len > MAX_FRAME - 24 {
        return None;
    }
    Some([(24 + len) as i32, crate::frame_buffer::MESSAGE, src, tag, ctx, enc, len as i32])
}

/// A record that is exactly one small message frame (as [`message_header`] begins it): its
/// tag, context, encoding and data; `None` for anything else (another frame, several, part of
/// one, or a message larger than `frame_buffer::LARGE`, which take the general path).
pub fn message_in(rec: &[u8]) -> Option<(i32, i32, i32, &[u8])> {
    let head = rec.get(..28)?;
    let word = |i: usize| i32::from_le_bytes(head[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let len = rec.len() - 28;
    let fits = word(0) as u32 as usize == 24 + len && word(6) as u32 as usize == len;
    (fits && word(1) == crate::frame_buffer::MESSAGE && len <= crate::frame_buffer::LARGE)
        .then(|| (word(3), word(4), word(5), &rec[28..]))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
