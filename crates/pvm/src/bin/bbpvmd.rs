//! `bbpvmd`: the PVM host agent (pvmd's role). The PVM library starts it on first use;
//! `bbpvmd --foreground` runs it in the terminal. `--dir D` serves the folder D instead of
//! `$BB_PVM_DIR` or `/tmp/bbpvm.<uid>`. `--added`: the agent of a host added to a virtual
//! machine, started by the first agent through the launcher command (`pvm_addhosts`), which
//! gives it its orders on stdin.

fn main() {
    let mut dir = pvm::place::dir();
    let mut foreground = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dir" => match args.next() {
                Some(d) => dir = d.into(),
                None => usage("--dir needs a folder"),
            },
            "--foreground" => foreground = true,
            "--added" => {
                if let Err(e) = pvm::agent::run_added() {
                    eprintln!("bbpvmd --added: {e}");
                    std::process::exit(1);
                }
                return;
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    if !foreground {
        match pvm::agent::daemonize() {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                eprintln!("bbpvmd: cannot detach: {e}");
                std::process::exit(1);
            }
        }
    }
    if let Err(e) = pvm::agent::run(&dir) {
        eprintln!("bbpvmd: {}: {e}", dir.display());
        std::process::exit(1);
    }
}

fn usage(why: &str) -> ! {
    eprintln!("bbpvmd: {why}\nusage: bbpvmd [--foreground] [--dir FOLDER] | bbpvmd --added");
    std::process::exit(2);
}
