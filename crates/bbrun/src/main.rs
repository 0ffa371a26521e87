//! `bbrun`: starts the ranks of a job on this host, serves them PMI-1, forwards their output,
//! stdin and signals, and tears the job down when a rank fails. See `job.rs` for the policy.

mod info;
mod job;
mod output;
mod pmi_server;
mod rank;
mod shm;
mod signals;
mod spawn;
mod stdin;

use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "bbrun",
    version,
    about = "Run a Billboard (or any PMI-1) parallel program on this host",
    after_help = "Examples:\n  bbrun -n 4 ./ring\n  bbrun -np 2 --tag-output -- ./prog --its-own-flag\n  bbrun --info"
)]
struct Cli {
    /// Number of ranks to start (`-np` is accepted too)
    #[arg(short = 'n', long = "np", value_name = "N", default_value_t = 1)]
    ranks: usize,
    /// Prefix every output line with `[rank] `
    #[arg(long)]
    tag_output: bool,
    /// List every tunable (BB_...) with its value and origin, then exit
    #[arg(long)]
    info: bool,
    /// The program to run, then its arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
    command: Vec<OsString>,
}

fn main() {
    let cli = Cli::parse_from(single_dash_np(std::env::args_os()));
    if cli.info {
        info::print();
        return;
    }
    let Some((program, args)) = cli.command.split_first() else {
        eprintln!("bbrun: no program given; try 'bbrun --help'");
        std::process::exit(2);
    };
    if cli.ranks == 0 {
        eprintln!("bbrun: -n must be at least 1");
        std::process::exit(2);
    }
    let program = PathBuf::from(program);
    if let Err((why, code)) = spawn::find_program(&program) {
        eprintln!("bbrun: {why}");
        std::process::exit(code);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cli.ranks > cores {
        eprintln!(
            "bbrun: warning: {} ranks on {cores} cores; ranks will take turns on the cores, expect slower progress",
            cli.ranks
        );
    }
    let opts = job::Options { size: cli.ranks, tag_output: cli.tag_output, program, args: args.to_vec() };
    let code = job::run(&opts, &new_jobid());
    std::process::exit(code);
}

/// `{our pid}x{32 random bits}`: unique on this host while we live, and not guessable, so no
/// other job's `/dev/shm` names collide with ours.
fn new_jobid() -> String {
    // RandomState is seeded from the OS's random source once per process.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish() as u32;
    format!("{}x{random:08x}", std::process::id())
}

/// MPICH and Open MPI spell the rank count `-np`; clap reads that as `-n p`. Rewrites a
/// `-np` that comes before the program into `-n`, leaving the program's own arguments alone.
fn single_dash_np(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args = args.into_iter();
    let mut out: Vec<OsString> = args.next().into_iter().collect();
    while let Some(arg) = args.next() {
        let text = arg.to_str().unwrap_or("");
        if text == "--" || !text.starts_with('-') {
            out.push(arg);
            break;
        }
        if let Some(rest) = text.strip_prefix("-np") {
            if rest.is_empty() || rest.starts_with('=') {
                out.push(format!("-n{rest}").into());
                continue;
            }
        }
        let takes_value = text == "-n" || text == "--np";
        out.push(arg);
        if takes_value {
            out.extend(args.next());
        }
    }
    out.extend(args);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from);
        single_dash_np(args).into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn np_becomes_n_before_the_program_only() {
        assert_eq!(rewrite(&["bbrun", "-np", "4", "prog", "-np", "x"]), ["bbrun", "-n", "4", "prog", "-np", "x"]);
        assert_eq!(rewrite(&["bbrun", "-np=2", "--", "-np"]), ["bbrun", "-n=2", "--", "-np"]);
        assert_eq!(rewrite(&["bbrun", "-n", "-np", "p"]), ["bbrun", "-n", "-np", "p"]);
        let cli = Cli::parse_from(rewrite(&["bbrun", "-np", "3", "--tag-output", "prog", "-x"]));
        assert_eq!((cli.ranks, cli.tag_output), (3, true));
        assert_eq!(cli.command, ["prog", "-x"]);
    }

    #[test]
    fn job_ids_differ() {
        assert_ne!(new_jobid(), new_jobid());
        assert!(new_jobid().starts_with(&format!("{}x", std::process::id())));
    }
}
