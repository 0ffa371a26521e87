//! The job's time limit: `MPIEXEC_TIMEOUT` seconds, as MPICH's Hydra reads it. A job still
//! running then is stopped like a failed one (every rank's process group on every host gets
//! SIGTERM, then SIGKILL), with a line that says why, and bbrun exits with 255, Hydra's status
//! for a job it timed out.

use super::reports::rank_list;
use super::*;

/// The variable, named as Hydra names it so scripts and CTest setups written for MPICH work.
pub const VAR: &str = "MPIEXEC_TIMEOUT";

/// bbrun's exit status for a job stopped at its time limit (Hydra's `mpiexec` exits 255 after
/// "APPLICATION TIMED OUT").
pub const EXIT_TIMED_OUT: i32 = 255;

/// The limit set in the environment: `None` when [`VAR`] is unset or empty, an error naming
/// the variable when it is not a positive number of seconds. (Hydra runs on regardless of
/// such a value, or without a limit for 0; a limit the user asked for and does not get is
/// worse than a refusal.)
pub fn from_env() -> Result<Option<Duration>, String> {
    match std::env::var_os(VAR) {
        None => Ok(None),
        Some(v) => parse(&v.to_string_lossy()),
    }
}

fn parse(value: &str) -> Result<Option<Duration>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    match value.parse::<u64>() {
        Ok(secs) if secs > 0 => Ok(Some(Duration::from_secs(secs))),
        _ => Err(format!("{VAR}={value:?} is not a positive whole number of seconds")),
    }
}

impl Job {
    /// Stops the job if it has run past its limit.
    pub(super) fn check_time_limit(&mut self, now: Instant) {
        let Some((limit, at)) = self.time_limit else { return };
        if at > now {
            return;
        }
        self.time_limit = None;
        let running: Vec<usize> = (0..self.members.len()).filter(|&r| !self.members[r].exited).collect();
        if running.is_empty() || self.stopping() {
            return;
        }
        let secs = limit.as_secs();
        let why = format!("the job exceeded {VAR}={secs} s with {} still running", rank_list(&running));
        self.fail(&why, EXIT_TIMED_OUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_only() {
        assert_eq!(parse("5"), Ok(Some(Duration::from_secs(5))));
        assert_eq!(parse(" 12 "), Ok(Some(Duration::from_secs(12))));
        assert_eq!(parse(""), Ok(None));
        for bad in ["0", "-3", "abc", "1.5", "5s", "99999999999999999999999"] {
            let err = parse(bad).unwrap_err();
            assert!(err.starts_with("MPIEXEC_TIMEOUT=") && err.contains(bad), "{err}");
        }
    }
}
