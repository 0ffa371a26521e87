//! The PMI-1 spawn request, sans-IO: MPICH's simple-PMI client sends one block per command of
//! an MPI_Comm_spawn(_multiple), each a line `mcmd=spawn`, then `key=value` lines, then
//! `endcmd`; one `cmd=spawn_result` answers the last block. Hydra serves the same wire, so a
//! program spawns alike under either launcher.
//!
//! ```text
//! mcmd=spawn
//! nprocs=2                  execname=./child         totspawns=1   spawnssofar=1
//! argcnt=2                  arg1=-x                  arg2=5
//! preput_num=1              preput_key_0=PARENT_ROOT_PORT_NAME     preput_val_0=bbport:...
//! info_num=1                info_key_0=wdir          info_val_0=/tmp
//! endcmd
//! ```
//! (one `key=value` a line; shown here in columns). Values run to the end of the line.

use std::collections::HashMap;

/// One command to start: `nprocs` copies of `execname args...`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnCommand {
    pub execname: String,
    pub args: Vec<String>,
    pub nprocs: usize,
    /// MPI info keys: `host`, `wdir`, `path` are honoured.
    pub info: Vec<(String, String)>,
}

impl SpawnCommand {
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A whole spawn: its commands and the keys to put in the new job's key-value space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnRequest {
    pub commands: Vec<SpawnCommand>,
    pub preput: Vec<(String, String)>,
}

/// Collects the blocks of one client's spawn request.
#[derive(Default)]
pub struct SpawnCollector {
    /// The block being read (its `key=value` lines), while inside `mcmd=spawn .. endcmd`.
    block: Option<HashMap<String, String>>,
    done: Vec<HashMap<String, String>>,
}

/// What a line did to the request.
#[derive(Debug, PartialEq, Eq)]
pub enum Collected {
    /// More lines are needed.
    More,
    /// The last block ended: the request, or why it is malformed.
    Request(Result<SpawnRequest, String>),
}

impl SpawnCollector {
    /// Whether a block is open (lines go here, not to the command parser).
    pub fn open(&self) -> bool {
        self.block.is_some()
    }

    /// Starts a block (the client sent `mcmd=spawn`).
    pub fn start(&mut self) {
        self.block = Some(HashMap::new());
    }

    /// Takes one line of an open block.
    pub fn line(&mut self, line: &str) -> Collected {
        let line = line.trim_end_matches(['\n', '\r']);
        let Some(block) = self.block.as_mut() else { return Collected::More };
        if line.trim() != "endcmd" {
            if let Some((k, v)) = line.split_once('=') {
                block.insert(k.trim().to_string(), v.to_string());
            }
            return Collected::More;
        }
        let block = self.block.take().expect("open");
        let (total, sofar) = (number(&block, "totspawns"), number(&block, "spawnssofar"));
        self.done.push(block);
        match (total, sofar) {
            (Ok(t), Ok(s)) if s < t => Collected::More,
            _ => Collected::Request(parse(std::mem::take(&mut self.done))),
        }
    }
}

fn number(block: &HashMap<String, String>, key: &str) -> Result<usize, String> {
    let text = block.get(key).ok_or_else(|| format!("the spawn request lacks {key}="))?;
    text.trim().parse().map_err(|_| format!("{key}={text:?} is not a number"))
}

fn parse(blocks: Vec<HashMap<String, String>>) -> Result<SpawnRequest, String> {
    let mut request = SpawnRequest::default();
    for (i, block) in blocks.iter().enumerate() {
        let text = |k: &str| block.get(k).cloned().ok_or_else(|| format!("the spawn request lacks {k}="));
        let argcnt = number(block, "argcnt").unwrap_or(0);
        let args = (1..=argcnt).map(|a| text(&format!("arg{a}"))).collect::<Result<Vec<_>, _>>()?;
        let infos = number(block, "info_num").unwrap_or(0);
        let info = (0..infos)
            .map(|k| Ok((text(&format!("info_key_{k}"))?, text(&format!("info_val_{k}"))?)))
            .collect::<Result<Vec<_>, String>>()?;
        let nprocs = number(block, "nprocs")?;
        if nprocs == 0 {
            return Err(format!("command {} of the spawn asks for 0 processes", i + 1));
        }
        request.commands.push(SpawnCommand { execname: text("execname")?, args, nprocs, info });
        if i == 0 {
            let preputs = number(block, "preput_num").unwrap_or(0);
            for k in 0..preputs {
                request.preput.push((text(&format!("preput_key_{k}"))?, text(&format!("preput_val_{k}"))?));
            }
        }
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(c: &mut SpawnCollector, text: &str) -> Collected {
        let mut last = Collected::More;
        for line in text.lines() {
            if line == "mcmd=spawn" {
                c.start();
                continue;
            }
            last = c.line(line);
        }
        last
    }

    #[test]
    fn two_commands_make_one_request() {
        let mut c = SpawnCollector::default();
        let first = "mcmd=spawn\nnprocs=2\nexecname=./a\ntotspawns=2\nspawnssofar=1\nargcnt=1\narg1=x y\n\
                     preput_num=1\npreput_key_0=K\npreput_val_0=v=1\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n";
        assert_eq!(feed(&mut c, first), Collected::More);
        assert!(!c.open());
        let second = "mcmd=spawn\nnprocs=1\nexecname=b\ntotspawns=2\nspawnssofar=2\nargcnt=0\npreput_num=0\ninfo_num=0\nendcmd\n";
        let Collected::Request(Ok(r)) = feed(&mut c, second) else { panic!("no request") };
        assert_eq!(r.commands.len(), 2);
        assert_eq!(r.commands[0].args, ["x y"]);
        assert_eq!(r.commands[0].info("wdir"), Some("/tmp"));
        assert_eq!((r.commands[1].execname.as_str(), r.commands[1].nprocs), ("b", 1));
        assert_eq!(r.preput, [("K".to_string(), "v=1".to_string())]);
    }

    #[test]
    fn malformed_requests_say_why() {
        let mut c = SpawnCollector::default();
        let Collected::Request(Err(why)) = feed(&mut c, "mcmd=spawn\nexecname=a\nendcmd\n") else { panic!() };
        assert!(why.contains("nprocs"), "{why}");
        let Collected::Request(Err(why)) = feed(&mut c, "mcmd=spawn\nnprocs=0\nexecname=a\nendcmd\n") else { panic!() };
        assert!(why.contains("0 processes"), "{why}");
    }
}
