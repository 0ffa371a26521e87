//! Belt and braces for shared memory: the library unlinks its segments as soon as every local
//! rank has mapped them, but a job killed mid-start can leave one. Segments of a job are named
//! `/dev/shm/bb-{user}-{BB_JOBID}-{random}`; after the job, any still there are removed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

const SHM_DIR: &str = "/dev/shm";

/// Removes this job's leftover segments. Matches any `{user}` spelling but only files owned
/// by us, and the job id (bbrun's pid plus random bits) keeps other jobs' files out of reach.
pub fn remove_job_segments(jobid: &str) {
    remove_matching(Path::new(SHM_DIR), jobid);
}

fn remove_matching(dir: &Path, jobid: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let needle = format!("-{jobid}-");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with("bb-") || !name.contains(&needle) {
            continue;
        }
        if entry.metadata().is_ok_and(|m| m.uid() == uid && m.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_this_jobs_files() {
        let dir = std::env::temp_dir().join(format!("bbrun-shm-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = ["bb-alice-12x34-0001", "bb-alice-12x345-0001", "bb-bob-99x1-0002", "other-12x34-1"];
        for n in names {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        remove_matching(&dir, "12x34");
        let mut left: Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["bb-alice-12x345-0001", "bb-bob-99x1-0002", "other-12x34-1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
