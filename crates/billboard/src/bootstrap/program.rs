//! Whether a program can be started here, as `exec` would find it: what bbrun checks before it
//! starts a rank or a spawned child, and what a spawn's root checks itself under a launcher
//! that does not (MPICH's Hydra starts what it is asked; when `exec` fails its proxy prints an
//! error and tells no one, and the parents would wait `BB_SPAWN_WAIT_MS` for children that
//! never come).

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// Finds the program as `exec` will, with the `PATH` the process will have: a name with a `/`
/// is a path, anything else is looked up in `path`. Errors say what is wrong in words, with
/// an exit code as a shell would give (127 not found, 126 not executable).
pub fn find_program_in(program: &Path, path: Option<&OsStr>) -> Result<PathBuf, (String, i32)> {
    let name = program.display();
    if program.as_os_str().is_empty() {
        return Err(("no program given".into(), 2));
    }
    if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        return check_executable(program).map(|()| program.to_path_buf()).map_err(|why| {
            let code = if program.exists() { 126 } else { 127 };
            (format!("cannot run '{name}': {why}"), code)
        });
    }
    let path = path.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut found_not_executable = false;
    for dir in std::env::split_paths(path) {
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(program.to_path_buf()),
            Err(_) if candidate.exists() => found_not_executable = true,
            Err(_) => {}
        }
    }
    if found_not_executable {
        Err((format!("cannot run '{name}': found in PATH but not executable"), 126))
    } else {
        Err((format!("cannot run '{name}': not found in PATH"), 127))
    }
}

fn check_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_string(),
        _ => e.to_string(),
    })?;
    if meta.is_dir() {
        return Err("it is a directory".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("not executable".into());
    }
    Ok(())
}

/// The program a spawned command `name` runs on this host, honouring MPI's `wdir` (the
/// working directory: it must be one, and a relative path with a `/` starts there) and `path`
/// (directories to look in before the `PATH` the children inherit) info keys; or why it cannot
/// run, naming it.
pub fn spawned_program(name: &str, wdir: Option<&str>, path: Option<&str>) -> Result<PathBuf, String> {
    let cwd = wdir.map(PathBuf::from);
    if let Some(dir) = &cwd {
        if !dir.is_dir() {
            return Err(format!("cannot start '{name}': its working directory {} is not a directory", dir.display()));
        }
    }
    let mut program = PathBuf::from(name);
    if let (Some(dir), true) = (&cwd, name.contains('/') && program.is_relative()) {
        program = dir.join(&program);
    }
    let mut search: Vec<PathBuf> = path.map_or_else(Vec::new, |p| std::env::split_paths(p).collect());
    search.extend(std::env::var_os("PATH").iter().flat_map(std::env::split_paths));
    let search = std::env::join_paths(search).map_err(|e| format!("cannot start '{name}': {e}"))?;
    find_program_in(&program, Some(&search)).map_err(|(why, _)| why)?;
    if !name.contains('/') {
        // Found through `path` or PATH: run what was found, whatever PATH the child has.
        if let Some(found) = std::env::split_paths(&search).map(|d| d.join(name)).find(|p| is_program(p)) {
            program = found;
        }
    }
    Ok(program)
}

fn is_program(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_program_is_found_like_exec_finds_it() {
        assert!(spawned_program("sh", None, None).unwrap().ends_with("sh"));
        assert!(spawned_program("sh", Some("/"), None).is_ok());
        let why = spawned_program("./no-such-program-bb", None, None).unwrap_err();
        assert!(why.contains("'./no-such-program-bb'") && why.contains("no such file"), "{why}");
        let why = spawned_program("sh", Some("/no/such/dir-bb"), None).unwrap_err();
        assert!(why.contains("/no/such/dir-bb") && why.contains("not a directory"), "{why}");
        // A relative path with a `/` starts in the working directory.
        assert_eq!(spawned_program("./sh", Some("/bin"), None).unwrap(), PathBuf::from("/bin/./sh"));
    }
}
