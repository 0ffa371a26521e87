//! `bbpvmd`: the PVM host agent (pvmd's role). The PVM library starts it on first use;
//! `bbpvmd --foreground` runs it in the terminal. `--dir D` serves the folder D instead of
//! `$BB_PVM_DIR` or `/tmp/bbpvm.<uid>`.

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
    eprintln!("bbpvmd: {why}\nusage: bbpvmd [--foreground] [--dir FOLDER]");
    std::process::exit(2);
}
