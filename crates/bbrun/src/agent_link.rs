//! The launcher's end of one remote host: the launcher command (`ssh HOST bbrun --agent`) as a
//! child process, orders written to its stdin, reports read from its stdout (see `relay.rs`).
//! Its stderr is ours: what ssh or the agent say about themselves reaches the user directly.
//!
//! The agent is gone when its stdout ends or its process exits; as the two seldom arrive at
//! once, the link waits up to [`EXIT_WAIT`] for the other, to tell how it ended.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use billboard::tunables::Tunable;

use crate::launcher::Launcher;
use crate::pipes::{read_some, set_nonblocking, write_pending, Chunk};
use crate::relay::{self, Decoder, Order, Report, Setup};
use crate::signals;

/// After an agent's stdout ended (or its process exited), how long to wait for the other.
pub const EXIT_WAIT: Duration = Duration::from_millis(500);

/// How long an agent may take to answer at all. A launcher command can wait forever without
/// it: ssh asking for a password (it runs in its own process group, away from the terminal), a
/// host that drops packets. 30 s by default: a loaded host and a slow login still fit.
pub static GREETING_WAIT: Tunable = Tunable::new(
    "BB_AGENT_WAIT",
    30,
    "seconds bbrun waits for the agent on a remote host to answer before it gives up on the host",
);

/// Environment variables not passed to remote ranks: they describe this machine or this login
/// session, not the job. Everything else goes, as with Hydra's default (`-genvall`).
const LOCAL_ONLY: [&str; 9] =
    ["HOSTNAME", "DISPLAY", "XAUTHORITY", "PWD", "OLDPWD", "SHLVL", "_", "TMUX", "BB_JOB_SECRET"];

pub struct AgentLink {
    /// The launcher command, for messages.
    pub command: String,
    child: Child,
    to_agent: Option<ChildStdin>,
    outbox: Vec<u8>,
    from_agent: Option<ChildStdout>,
    decoder: Decoder<Report>,
    pub status: Option<ExitStatus>,
    /// When the stdout ended or the process exited, whichever came first.
    lost_at: Option<Instant>,
    /// Why the stream from the agent was unusable, if it was.
    pub broken: Option<String>,
    started_at: Instant,
    /// We killed the launcher command; its end is on its way.
    killed: bool,
}

impl AgentLink {
    /// Runs the launcher command for `host` and queues the job's setup for the agent.
    pub fn start(launcher: &Launcher, host: &str, setup: &Setup) -> Result<AgentLink, String> {
        let agent = agent_command().map_err(|e| format!("cannot find bbrun's own path to start agents: {e}"))?;
        let words = launcher.command(host, &agent);
        let command = words.join(" ");
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).process_group(0);
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(|| {
                // bbrun blocks the signals it reads through its signalfd; the launcher command
                // (and an agent it execs) must start with none blocked.
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
                // SIGTERM, not SIGKILL: an agent started right here (`ip netns exec`) then
                // still stops its ranks and cleans up; ssh ends and the remote agent sees EOF.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the agent on host {host}: `{command}`: {e}"))?;
        let to_agent = child.stdin.take().filter(|p| set_nonblocking(p.as_fd()).is_ok());
        let from_agent = child.stdout.take().filter(|p| set_nonblocking(p.as_fd()).is_ok());
        let mut link = AgentLink {
            command,
            child,
            to_agent,
            outbox: Vec::new(),
            from_agent,
            decoder: Decoder::default(),
            status: None,
            lost_at: None,
            broken: None,
            started_at: Instant::now(),
            killed: false,
        };
        relay::start_stream(&mut link.outbox);
        link.send(&Order::Setup(Box::new(setup.clone())));
        Ok(link)
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Queues an order and writes what the pipe takes now.
    pub fn send(&mut self, order: &Order) {
        if self.to_agent.is_some() {
            relay::encode(order, &mut self.outbox);
            self.flush();
        }
    }

    pub fn flush(&mut self) {
        if let Some(pipe) = self.to_agent.as_mut() {
            if write_pending(pipe, &mut self.outbox).is_err() {
                // The agent is gone; its stdout's end tells the rest.
                self.to_agent = None;
                self.outbox.clear();
            }
        }
    }

    /// The agent's stdin, while orders wait for it.
    pub fn waiting_input(&self) -> Option<BorrowedFd<'_>> {
        self.to_agent.as_ref().filter(|_| !self.outbox.is_empty()).map(|p| p.as_fd())
    }

    /// The agent's stdout, while it is open.
    pub fn output(&self) -> Option<BorrowedFd<'_>> {
        self.from_agent.as_ref().map(|p| p.as_fd())
    }

    /// Reads and decodes what the agent sent.
    pub fn on_readable(&mut self, now: Instant, out: &mut Vec<Report>) {
        let Some(pipe) = self.from_agent.as_mut() else { return };
        match read_some(pipe) {
            Chunk::Data(bytes) => self.decoder.push(&bytes),
            Chunk::Empty => return,
            Chunk::End => {
                self.from_agent = None;
                self.lost_at.get_or_insert(now);
            }
        }
        loop {
            match self.decoder.next() {
                Ok(Some(report)) => out.push(report),
                Ok(None) => break,
                Err(e) => {
                    self.broken = Some(e.to_string());
                    self.from_agent = None;
                    self.lost_at.get_or_insert(now);
                    self.kill();
                    break;
                }
            }
        }
    }

    /// Whether the agent spoke our protocol at all.
    pub fn greeted(&self) -> bool {
        self.decoder.greeted()
    }

    /// Notes the launcher command's exit (on SIGCHLD).
    pub fn try_reap(&mut self, now: Instant) {
        if self.status.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(status);
                self.lost_at.get_or_insert(now);
            }
        }
    }

    /// When the link must be declared gone even if only one of its ends has shown it.
    pub fn deadline(&self) -> Option<Instant> {
        self.lost_at.map(|t| t + EXIT_WAIT)
    }

    /// Until when the agent may stay silent, while it has said nothing.
    pub fn greeting_deadline(&self) -> Option<Instant> {
        let silent = !self.greeted() && self.lost_at.is_none() && !self.killed;
        silent.then(|| self.started_at + Duration::from_secs(GREETING_WAIT.get() as u64))
    }

    /// Whether the agent is gone: both its output ended and its process exited, or one of them
    /// [`EXIT_WAIT`] ago.
    pub fn gone(&self, now: Instant) -> bool {
        let both = self.from_agent.is_none() && self.status.is_some();
        both || self.deadline().is_some_and(|d| d <= now)
    }

    /// Kills the launcher command's process group (and with it an agent started right here).
    pub fn kill(&mut self) {
        self.killed = true;
        if self.status.is_none() {
            signals::kill_group(self.pid(), libc::SIGKILL);
        }
    }

    /// Kills what is left and reaps it; the link is done after this.
    pub fn kill_and_wait(&mut self) {
        self.kill();
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
    }

    /// How the agent ended, for messages: "exited with code 255", "was killed by signal 9 (SIGKILL)".
    pub fn ending(&self) -> String {
        match self.status {
            Some(s) => match s.signal() {
                Some(sig) => format!("was killed by signal {sig} ({})", signals::name(sig)),
                None => format!("exited with code {}", s.code().unwrap_or(-1)),
            },
            None => "closed its connection".into(),
        }
    }
}

/// This binary's absolute path and `--agent`.
fn agent_command() -> io::Result<Vec<String>> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_str().ok_or_else(|| io::Error::other("the path is not UTF-8"))?;
    Ok(vec![exe.to_owned(), "--agent".into()])
}

/// The environment to pass to remote ranks.
pub fn forwarded_env() -> Vec<(Vec<u8>, Vec<u8>)> {
    std::env::vars_os()
        .filter(|(name, _)| !is_local_only(name))
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

fn is_local_only(name: &OsStr) -> bool {
    let name = name.as_bytes();
    name.starts_with(b"SSH_") || LOCAL_ONLY.iter().any(|n| n.as_bytes() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_variables_stay_here() {
        assert!(is_local_only(OsStr::new("SSH_AUTH_SOCK")));
        assert!(is_local_only(OsStr::new("DISPLAY")));
        assert!(is_local_only(OsStr::new("BB_JOB_SECRET")));
        assert!(!is_local_only(OsStr::new("PATH")));
        assert!(!is_local_only(OsStr::new("BB_VERBOSE")));
    }
}
