//! `bbrun`: starts the ranks of a job on this host and on remote hosts (through an agent per
//! host, `agent.rs`), serves them PMI-1, forwards their output, stdin and signals, and tears
//! the job down when a rank fails. See `job.rs` for the policy, `hosts.rs` for placement.

mod agent;
mod agent_link;
mod bind;
mod hosts;
mod info;
mod job;
mod launcher;
mod local_ranks;
mod output;
mod pipes;
mod pmi_server;
mod pmi_spawn;
mod rank;
mod relay;
mod shm;
mod signals;
mod slurm;
mod spawn;
mod stdin;

use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use clap::Parser;

use hosts::Placement;
use launcher::Launcher;

/// `bbrun --version`: this build, and the interfaces its libraries offer (as `mpichversion`
/// tells MPICH's; a test checks them against the headers).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nMPI 4.0 (MPI_VERSION 4, MPI_SUBVERSION 0), binary compatible with MPICH 4.0.2: libmpi.so.12 \
     (also as libmpich.so.12), libmpichfort.so.12\nPVM 3.4.6: libpvm3.so.3, libgpvm3.so.3\n\
     Routes: shared memory (the billboard), TCP, UDP (BB_ROUTES)"
);

#[derive(Parser)]
#[command(
    name = "bbrun",
    version,
    long_version = LONG_VERSION,
    about = "Run a Billboard (or any PMI-1) parallel program on this host or on several",
    after_help = "Hosts named localhost or this machine's name run here, without the launcher.\n\
MPIEXEC_TIMEOUT=S in the environment limits the job to S seconds: then every rank is killed and \
bbrun exits with 255, as MPICH's mpiexec does.\n\n\
Examples:\n  bbrun -n 4 ./ring\n  bbrun -np 2 --tag-output -- ./prog --its-own-flag\n  \
bbrun --host node1:4,node2:4 ./ring\n  bbrun --hostfile hosts -ppn 2 ./ring\n  \
bbrun --launcher 'ip netns exec {host}' --host ns1,ns2 ./ring\n  bbrun --info"
)]
struct Cli {
    /// Number of ranks to start (`-np` is accepted too); with hosts, all their slots by default
    #[arg(short = 'n', long = "np", value_name = "N")]
    ranks: Option<usize>,
    /// Ranks per host, placed in blocks (overrides the hosts' slot counts; `-ppn` works too)
    #[arg(long, value_name = "N")]
    ppn: Option<usize>,
    /// Hosts to run on, each with its slots (`host` alone is 1 slot); ranks fill each host's
    /// slots in turn, wrapping around
    #[arg(
        long = "host",
        short = 'H',
        visible_alias = "hosts",
        value_name = "HOST[:SLOTS],...",
        conflicts_with = "hostfile"
    )]
    hosts: Option<String>,
    /// A file of hosts, one a line: `host:slots` (MPICH) or `host slots=N` (Open MPI)
    #[arg(long, visible_alias = "machinefile", value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Command that starts bbrun's agent on a remote host: `{host}` in it becomes the host's
    /// name, else the name is appended; the agent's command comes last [default: ssh; in a
    /// Slurm allocation, srun]
    #[arg(long, value_name = "TEMPLATE")]
    launcher: Option<String>,
    /// Run as the host agent of a job (started by bbrun through the launcher, not by hand)
    #[arg(long, hide = true)]
    agent: bool,
    /// Prefix every output line with `[rank] ` (MPICH's `-l` and `-prepend-rank` too)
    #[arg(long, short_alias = 'l', alias = "prepend-rank")]
    tag_output: bool,
    /// List every tunable (BB_...) with its value and origin, then exit
    #[arg(long)]
    info: bool,
    /// Give every rank NAME=VALUE, or NAME with its value here (Open MPI's `-x`)
    #[arg(short = 'x', value_name = "NAME[=VALUE]")]
    export: Vec<String>,
    /// Give every rank NAME=VALUE (MPICH's `-genv NAME VALUE`)
    #[arg(long, num_args = 2, value_names = ["NAME", "VALUE"])]
    genv: Vec<String>,
    /// Give this program's ranks NAME=VALUE (MPICH's `-env`: local to its part of an MPMD line)
    #[arg(long, num_args = 2, value_names = ["NAME", "VALUE"])]
    env: Vec<String>,
    /// Where this program's ranks start (MPICH's `-wdir`, Open MPI's `-wd`)
    #[arg(long, value_name = "DIR")]
    wdir: Option<PathBuf>,
    /// Pass the whole environment (the default; MPICH's `-genvall`, `-envall`)
    #[arg(long, hide = true)]
    genvall: bool,
    /// Bind each rank of a host to one hwthread, core, socket or numa node of those bbrun (or
    /// the host's agent) may use, in turn, wrapping around; none (the default) leaves the
    /// kernel free to move them (MPICH's `-bind-to`, Open MPI's `--bind-to`)
    #[arg(long, value_name = "UNIT", value_parser = bind_unit)]
    bind_to: Option<String>,
    /// More ranks than cores is allowed (with a warning) anyway: Open MPI's `--oversubscribe`
    #[arg(long, hide = true)]
    oversubscribe: bool,
    /// The program to run, then its arguments; `:` then `-n N [-env NAME VALUE] [-wdir DIR]
    /// PROGRAM [ARGS]` adds another program's ranks (MPMD)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
    command: Vec<OsString>,
}

/// A further program of an MPMD line (`bbrun -n 1 ./a : -n 2 ./b`), after its `:`.
#[derive(Parser)]
#[command(name = "bbrun ... :")]
struct AppCli {
    /// Its number of ranks
    #[arg(short = 'n', long = "np", value_name = "N")]
    ranks: Option<usize>,
    #[arg(long, num_args = 2, value_names = ["NAME", "VALUE"])]
    env: Vec<String>,
    #[arg(long, value_name = "DIR")]
    wdir: Option<PathBuf>,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM [ARGS]")]
    command: Vec<OsString>,
}

fn main() {
    let cli = Cli::parse_from(single_dash_options(std::env::args_os()));
    if cli.agent {
        std::process::exit(agent::main());
    }
    match rank_environment(&cli) {
        Ok(vars) => vars.into_iter().for_each(|(name, value)| std::env::set_var(name, value)),
        Err(e) => {
            eprintln!("bbrun: {e}");
            std::process::exit(2);
        }
    }
    if cli.info {
        info::print();
        // With a placement (-n, --host, --hostfile), also the route each pair of ranks will take.
        if cli.ranks.is_some() || cli.hosts.is_some() || cli.hostfile.is_some() {
            match placement(&cli, cli.ranks) {
                Ok(p) => info::print_routes(&p),
                Err(e) => {
                    eprintln!("bbrun: {e}");
                    std::process::exit(2);
                }
            }
        }
        return;
    }
    let usage_error = |why: String| -> ! {
        eprintln!("bbrun: {why}");
        std::process::exit(2);
    };
    let mut apps = apps(&cli).unwrap_or_else(|e| usage_error(e));
    // One program takes every rank (its -n, or the hosts' slots); several each their own -n.
    let ranks = if apps.len() == 1 { cli.ranks } else { Some(apps.iter().map(|a| a.ranks).sum()) };
    let placement = placement(&cli, ranks).unwrap_or_else(|e| usage_error(e));
    if apps.len() == 1 {
        apps[0].ranks = placement.host_of.len();
    }
    let template = match (&cli.launcher, in_allocation(&cli)) {
        (Some(given), _) => given.as_str(),
        (None, true) => slurm::LAUNCHER,
        (None, false) => launcher::DEFAULT,
    };
    let launcher = Launcher::parse(template).unwrap_or_else(|e| usage_error(e));
    let time_limit = job::time_limit::from_env().unwrap_or_else(|e| usage_error(e));
    let hostname = billboard::transport::tcp::addr::host_name();
    let local: Vec<bool> = placement.hosts.iter().map(|h| hosts::is_this_machine(h, &hostname)).collect();
    // Remote hosts look the programs up themselves; an error there names the host.
    if local.iter().any(|&l| l) {
        for app in &apps {
            if let Some(dir) = app.wdir.as_ref().filter(|d| !d.is_dir()) {
                usage_error(format!("-wdir {}: not a folder here", dir.display()));
            }
            if let Err((why, code)) = spawn::find_program(&app.program) {
                eprintln!("bbrun: {why}");
                std::process::exit(code);
            }
        }
    }
    let here = placement.host_of.iter().filter(|&&h| local[h]).count();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if here > cores {
        eprintln!(
            "bbrun: warning: {here} ranks on {cores} cores; ranks will take turns on the cores, expect slower progress"
        );
    }
    let opts = job::Options { tag_output: cli.tag_output, apps, placement, local, launcher, time_limit };
    let code = job::run(&opts, &new_jobid());
    std::process::exit(code);
}

fn bind_unit(word: &str) -> Result<String, String> {
    bind::parse(word).map(|_| word.to_owned())
}

/// The programs of the command line, in rank order: the first after the options, then one
/// after each `:` with options of its own (MPMD). A program's `-wdir` is made absolute, and a
/// relative program path with a `/` is taken in it (as MPI_Comm_spawn's `wdir` does).
fn apps(cli: &Cli) -> Result<Vec<job::App>, String> {
    let mut segments = cli.command.split(|word| word == ":");
    let first = segments.next().unwrap_or_default();
    let mut apps = vec![app(cli.ranks.unwrap_or(0), &cli.env, cli.wdir.as_deref(), first)?];
    for (k, words) in segments.enumerate() {
        let mut argv = vec![OsString::from("bbrun ... :")];
        argv.extend(words.iter().cloned());
        let part = AppCli::try_parse_from(single_dash_options(argv)).map_err(|e| {
            let e = e.to_string();
            format!("program {} of the MPMD line: {}", k + 2, e.trim().trim_start_matches("error: "))
        })?;
        let Some(n) = part.ranks.filter(|&n| n > 0) else {
            return Err(format!("program {} of the MPMD line has no -n (each program after ':' needs one)", k + 2));
        };
        apps.push(app(n, &part.env, part.wdir.as_deref(), &part.command)?);
    }
    if apps.len() > 1 && cli.ranks.is_none_or(|n| n == 0) {
        return Err("the first program of the MPMD line has no -n (each program needs one)".into());
    }
    Ok(apps)
}

fn app(ranks: usize, env: &[String], wdir: Option<&Path>, command: &[OsString]) -> Result<job::App, String> {
    let Some((program, args)) = command.split_first() else {
        return Err("no program given; try 'bbrun --help'".into());
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let wdir = wdir.map(|d| cwd.join(d));
    let mut program = PathBuf::from(program);
    if let Some(dir) =
        wdir.as_ref().filter(|_| program.is_relative() && program.as_os_str().as_encoded_bytes().contains(&b'/'))
    {
        program = dir.join(program);
    }
    let env = env.chunks(2).map(|pair| (OsString::from(&pair[0]), OsString::from(&pair[1]))).collect();
    Ok(job::App { program, args: args.to_vec(), env, wdir, ranks })
}

/// Where the ranks go: on the hosts of `--host` or `--hostfile`, else on the nodes of the Slurm
/// allocation bbrun runs in, else all on this machine, which the job then calls `localhost`;
/// `ranks` of them, or (with hosts) all their slots.
fn placement(cli: &Cli, ranks: Option<usize>) -> Result<Placement, String> {
    let hosts = if let Some(list) = &cli.hosts {
        hosts::parse_host_list(list)?
    } else if let Some(file) = &cli.hostfile {
        let text =
            std::fs::read_to_string(file).map_err(|e| format!("cannot read hostfile {}: {e}", file.display()))?;
        hosts::parse_hostfile(&text, &file.display().to_string())?
    } else if let Some(nodes) = slurm::allocation(|name| std::env::var(name).ok())? {
        nodes
    } else {
        return match ranks.unwrap_or(1) {
            0 => Err("-n must be at least 1".into()),
            n => Ok(Placement::single("localhost", n)),
        };
    };
    hosts::place(&hosts, cli.ppn, ranks)
}

/// The variables of `-x` and `-genv`, checked. `main` puts them into bbrun's own environment
/// before any thread or rank starts: every rank inherits it here, remote hosts get it forwarded
/// (`agent_link::forwarded_env`), spawned children too, and a `BB_` tunable given this way
/// steers bbrun as it would from the shell.
fn rank_environment(cli: &Cli) -> Result<Vec<(String, String)>, String> {
    let mut vars = Vec::new();
    for item in &cli.export {
        vars.push(match item.split_once('=') {
            Some((name, value)) => (name.to_owned(), value.to_owned()),
            None => {
                let value = std::env::var(item)
                    .map_err(|_| format!("-x {item}: {item} is not set here (give -x {item}=VALUE)"))?;
                (item.clone(), value)
            }
        });
    }
    vars.extend(cli.genv.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())));
    // The binding reaches every host's agent the way -genv's variables do (bind.rs).
    vars.extend(cli.bind_to.iter().map(|unit| (bind::ENV.to_owned(), unit.clone())));
    match vars.iter().find(|(name, _)| name.is_empty() || name.contains('=')) {
        Some((name, _)) => {
            Err(format!("cannot give ranks the variable {name:?}: a name is not empty and holds no '='"))
        }
        None => Ok(vars),
    }
}

/// Whether the ranks go on a Slurm allocation's nodes (no hosts given, and bbrun runs in one).
fn in_allocation(cli: &Cli) -> bool {
    cli.hosts.is_none() && cli.hostfile.is_none() && std::env::var_os("SLURM_JOB_NODELIST").is_some()
}

/// `{our pid}x{32 random bits}`: unique on this host while we live, and not guessable, so no
/// other job's `/dev/shm` names collide with ours.
fn new_jobid() -> String {
    // RandomState is seeded from the OS's random source once per process.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish() as u32;
    format!("{}x{random:08x}", std::process::id())
}

/// MPICH and Open MPI spell options with one dash (`-np`, `-ppn`, `-hosts`, `-f`); clap reads
/// `-np` as `-n p`. Rewrites those that come before the program into the forms clap knows,
/// leaving the program's own arguments alone.
const SINGLE_DASH: [(&str, &str); 18] = [
    ("-np", "-n"),
    ("-oversubscribe", "--oversubscribe"),
    ("-bind-to", "--bind-to"),
    ("-prepend-rank", "--tag-output"),
    ("-tag-output", "--tag-output"),
    ("-genv", "--genv"),
    ("-env", "--env"),
    ("-wdir", "--wdir"),
    ("-wd", "--wdir"),
    ("-genvall", "--genvall"),
    ("-envall", "--genvall"),
    ("-ppn", "--ppn"),
    ("-host", "--host"),
    ("-hosts", "--host"),
    ("-hostfile", "--hostfile"),
    ("-machinefile", "--hostfile"),
    ("-f", "--hostfile"),
    ("-launcher", "--launcher"),
];

/// Options followed by values (which may start with `-` and must not be rewritten), and how many.
const TAKES_VALUES: [(&str, usize); 14] = [
    ("-H", 1),
    ("-n", 1),
    ("--np", 1),
    ("--ppn", 1),
    ("--host", 1),
    ("--hosts", 1),
    ("--hostfile", 1),
    ("--machinefile", 1),
    ("--launcher", 1),
    ("-x", 1),
    ("--genv", 2),
    ("--env", 2),
    ("--wdir", 1),
    ("--bind-to", 1),
];

fn single_dash_options(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args = args.into_iter();
    let mut out: Vec<OsString> = args.next().into_iter().collect();
    while let Some(arg) = args.next() {
        let text = arg.to_str().unwrap_or("");
        if text == "--" || !text.starts_with('-') {
            out.push(arg);
            break;
        }
        let (name, value) = match text.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (text, None),
        };
        let rewritten = SINGLE_DASH.iter().find(|(from, _)| *from == name).map(|(_, to)| *to);
        let name = rewritten.unwrap_or(name);
        out.push(match (rewritten, value) {
            (None, _) => arg.clone(),
            (Some(_), Some(v)) => format!("{name}={v}").into(),
            (Some(_), None) => name.into(),
        });
        if value.is_none() {
            let count = TAKES_VALUES.iter().find(|(n, _)| *n == name).map_or(0, |(_, c)| *c);
            out.extend(args.by_ref().take(count));
        }
    }
    out.extend(args);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The versions `--version` names are the ones the headers define.
    #[test]
    fn the_long_version_names_the_headers_versions() {
        let header = |rel: &str| std::fs::read_to_string(format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let define = |text: &str, name: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix("#define ")?.strip_prefix(name).map(|v| v.trim().trim_matches('"').to_string())
                })
                .unwrap_or_else(|| panic!("{name} not defined"))
        };
        let mpi = header("mpi/include/mpi.h");
        let (v, sub) = (define(&mpi, "MPI_VERSION"), define(&mpi, "MPI_SUBVERSION"));
        assert!(LONG_VERSION.contains(&format!("MPI {v}.{sub} (MPI_VERSION {v}, MPI_SUBVERSION {sub})")));
        let pvm = define(&header("pvm/include/pvm3.h"), "PVM_VER");
        assert!(LONG_VERSION.contains(&format!("PVM {pvm}:")), "{pvm}");
    }

    fn rewrite(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from);
        single_dash_options(args).into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn np_becomes_n_before_the_program_only() {
        assert_eq!(rewrite(&["bbrun", "-np", "4", "prog", "-np", "x"]), ["bbrun", "-n", "4", "prog", "-np", "x"]);
        assert_eq!(rewrite(&["bbrun", "-np=2", "--", "-np"]), ["bbrun", "-n=2", "--", "-np"]);
        assert_eq!(rewrite(&["bbrun", "-n", "-np", "p"]), ["bbrun", "-n", "-np", "p"]);
        let cli = Cli::parse_from(rewrite(&["bbrun", "-np", "3", "--tag-output", "prog", "-x"]));
        assert_eq!((cli.ranks, cli.tag_output), (Some(3), true));
        assert_eq!(cli.command, ["prog", "-x"]);
        let cli = Cli::parse_from(rewrite(&["bbrun", "-H", "a,b", "--oversubscribe", "-np", "4", "prog"]));
        assert_eq!((cli.hosts.as_deref(), cli.ranks, cli.oversubscribe), (Some("a,b"), Some(4), true));
        for tag in ["-l", "-prepend-rank", "-tag-output"] {
            assert!(Cli::parse_from(rewrite(&["bbrun", tag, "prog", "-l"])).tag_output, "{tag}");
        }
    }

    #[test]
    fn mpich_style_host_options() {
        let args = ["bbrun", "-ppn", "2", "-hosts", "a,b", "-launcher", "ip netns exec {host}", "prog", "-f", "x"];
        let cli = Cli::parse_from(rewrite(&args));
        assert_eq!((cli.ppn, cli.hosts.as_deref()), (Some(2), Some("a,b")));
        assert_eq!(cli.launcher.as_deref(), Some("ip netns exec {host}"));
        assert_eq!(cli.command, ["prog", "-f", "x"]);
        let cli = Cli::parse_from(rewrite(&["bbrun", "-f", "hosts.txt", "prog"]));
        assert_eq!(cli.hostfile, Some(PathBuf::from("hosts.txt")));
        assert_eq!(
            placement(&cli, cli.ranks).unwrap_err(),
            "cannot read hostfile hosts.txt: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn environment_options_of_open_mpi_and_mpich() {
        let args =
            ["bbrun", "-x", "A=1", "-genv", "B", "-two", "-env", "C", "3", "-x", "=4", "-envall", "prog", "-x", "y"];
        let cli = Cli::parse_from(rewrite(&args));
        assert_eq!(cli.export, ["A=1", "=4"]);
        assert_eq!(cli.genv, ["B", "-two"]);
        assert_eq!(cli.env, ["C", "3"]);
        assert!(cli.genvall);
        assert_eq!(cli.command, ["prog", "-x", "y"]);
        assert!(rank_environment(&cli).unwrap_err().starts_with("cannot give ranks the variable \"\""));
        let cli = Cli::parse_from(rewrite(&["bbrun", "-x", "PATH", "-genv", "E", "", "prog"]));
        let path = std::env::var("PATH").unwrap();
        assert_eq!(rank_environment(&cli).unwrap(), [("PATH".into(), path), ("E".into(), String::new())]);
        let cli = Cli::parse_from(["bbrun", "-x", "BB_TEST_SURELY_UNSET_42", "prog"]);
        assert_eq!(
            rank_environment(&cli).unwrap_err(),
            "-x BB_TEST_SURELY_UNSET_42: BB_TEST_SURELY_UNSET_42 is not set here (give -x BB_TEST_SURELY_UNSET_42=VALUE)"
        );
    }

    #[test]
    fn an_mpmd_line_gives_each_program_its_ranks_variables_and_folder() {
        let line =
            ["bbrun", "-genv", "G", "1", "-n", "1", "-env", "A", "a", "./a", "x", ":", "-np", "2", "-wdir", "/tmp"];
        let mut line: Vec<&str> = line.into();
        line.extend(["-env", "B", "b", "sub/b", "-n", ":", "-n", "3", "c"]);
        let cli = Cli::parse_from(rewrite(&line));
        let parsed = apps(&cli).unwrap();
        let summary: Vec<_> = parsed
            .iter()
            .map(|a| (a.ranks, a.program.clone(), a.args.clone(), a.env.clone(), a.wdir.clone()))
            .collect();
        let os = |s: &str| OsString::from(s);
        assert_eq!(
            summary,
            [
                (1, PathBuf::from("./a"), vec![os("x")], vec![(os("A"), os("a"))], None),
                (2, PathBuf::from("/tmp/sub/b"), vec![os("-n")], vec![(os("B"), os("b"))], Some(PathBuf::from("/tmp"))),
                (3, PathBuf::from("c"), vec![], vec![], None),
            ]
        );
        assert_eq!(cli.genv, ["G", "1"]);
        let error = |line: &[&str]| apps(&Cli::parse_from(rewrite(line))).unwrap_err();
        assert_eq!(
            error(&["bbrun", "-n", "1", "a", ":", "b"]),
            "program 2 of the MPMD line has no -n (each program after ':' needs one)"
        );
        assert_eq!(
            error(&["bbrun", "a", ":", "-n", "1", "b"]),
            "the first program of the MPMD line has no -n (each program needs one)"
        );
        assert_eq!(error(&["bbrun", "-n", "1", "a", ":", "-n", "1"]), "no program given; try 'bbrun --help'");
        assert!(error(&["bbrun", "-n", "1", "a", ":", "-n", "x", "b"])
            .starts_with("program 2 of the MPMD line: invalid value 'x'"));
    }

    #[test]
    fn placement_from_the_command_line() {
        let cli = Cli::parse_from(["bbrun", "--host", "a:2,b", "prog"]);
        let p = placement(&cli, cli.ranks).unwrap();
        assert_eq!((p.hosts, p.host_of), (vec!["a".to_string(), "b".to_string()], vec![0, 0, 1]));
        let cli = Cli::parse_from(["bbrun", "prog"]);
        assert_eq!(placement(&cli, cli.ranks).unwrap(), Placement::single("localhost", 1));
        let cli = Cli::parse_from(["bbrun", "-n", "0", "prog"]);
        assert!(placement(&cli, cli.ranks).is_err());
        assert!(Cli::try_parse_from(["bbrun", "--host", "a", "--hostfile", "f", "prog"]).is_err());
    }

    #[test]
    fn job_ids_differ() {
        assert_ne!(new_jobid(), new_jobid());
        assert!(new_jobid().starts_with(&format!("{}x", std::process::id())));
    }
}
