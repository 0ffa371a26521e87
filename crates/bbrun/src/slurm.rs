//! Inside a Slurm allocation (`salloc`, `sbatch`), as Hydra and Open MPI's `mpirun` do there:
//! with no `--host` or `--hostfile`, the ranks go on the allocation's nodes
//! (`SLURM_JOB_NODELIST`), as many per node as Slurm gave it tasks (`SLURM_TASKS_PER_NODE`,
//! else its CPUs, `SLURM_JOB_CPUS_PER_NODE`); and unless `--launcher` says otherwise, the agents
//! of the other nodes start as job steps ([`LAUNCHER`]), so Slurm sees and ends them.

use crate::hosts::HostSlots;

/// How an agent starts on another node of the allocation: one task there, overlapping the
/// allocation's other steps (it uses no CPU of its own), no MPI set-up, srun's notes kept quiet,
/// and its output passed on as it comes: by default the step daemon holds a task's output until
/// a newline, and the relay's frames need none (the job then hung until its time ran out).
pub const LAUNCHER: &str = "srun --nodes=1 --ntasks=1 --overlap --mpi=none --quiet --unbuffered --nodelist={host}";

/// The allocation's nodes and slots, read through `var`; `None` outside an allocation.
pub fn allocation(var: impl Fn(&str) -> Option<String>) -> Result<Option<Vec<HostSlots>>, String> {
    let Some(list) = var("SLURM_JOB_NODELIST") else {
        return Ok(None);
    };
    let nodes = expand_nodelist(&list).map_err(|why| format!("SLURM_JOB_NODELIST={list:?}: {why}"))?;
    let (name, text) = match var("SLURM_TASKS_PER_NODE") {
        Some(text) => ("SLURM_TASKS_PER_NODE", text),
        None => ("SLURM_JOB_CPUS_PER_NODE", var("SLURM_JOB_CPUS_PER_NODE").unwrap_or_else(|| "1".into())),
    };
    let counts = expand_counts(&text).map_err(|why| format!("{name}={text:?}: {why}"))?;
    if counts.len() != nodes.len() {
        return Err(format!(
            "{name}={text:?} gives {} counts for the {} nodes of SLURM_JOB_NODELIST={list:?}",
            counts.len(),
            nodes.len()
        ));
    }
    Ok(Some(nodes.into_iter().zip(counts).map(|(name, slots)| HostSlots { name, slots }).collect()))
}

/// Slurm's host list: `a,b`, `node[01-03,7]`, `r[1-2]n[1-2]` (every bracket group expanded,
/// zero padding kept).
pub fn expand_nodelist(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_top_level(list)? {
        out.extend(expand_item(&item)?);
    }
    Ok(out)
}

/// `list` cut at the commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<String>, String> {
    let (mut items, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in list.trim().chars() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Err("a ']' without its '['".into()),
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if depth != 0 {
        return Err("a '[' without its ']'".into());
    }
    items.push(current);
    if items.iter().any(String::is_empty) {
        return Err("an empty host name".into());
    }
    Ok(items)
}

fn expand_item(item: &str) -> Result<Vec<String>, String> {
    let Some(open) = item.find('[') else { return Ok(vec![item.to_owned()]) };
    let close = open + item[open..].find(']').ok_or("a '[' without its ']'")?;
    let (prefix, ranges, rest) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    let tails = expand_item(rest)?;
    let mut out = Vec::new();
    for range in ranges.split(',') {
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        let number = |t: &str| t.parse::<u64>().map_err(|_| format!("{range:?} is not a number or a range"));
        let (first, last) = (number(low)?, number(high)?);
        if first > last || last - first > 100_000 {
            return Err(format!("the range {range:?} is backwards or too long"));
        }
        for n in first..=last {
            for tail in &tails {
                out.push(format!("{prefix}{n:0width$}{tail}", width = low.len()));
            }
        }
    }
    Ok(out)
}

/// Slurm's counts per node: `2(x3),1` is 2, 2, 2, 1.
pub fn expand_counts(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in text.trim().split(',') {
        let (count, repeat) = match part.split_once("(x") {
            Some((count, rest)) => (count, rest.strip_suffix(')').ok_or_else(|| format!("{part:?} lacks its ')'"))?),
            None => (part, "1"),
        };
        let count: usize = count.parse().map_err(|_| format!("{part:?} is not a count"))?;
        let repeat: usize = repeat.parse().map_err(|_| format!("{part:?} is not a count"))?;
        out.extend(std::iter::repeat_n(count, repeat.min(100_000)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_lists_as_slurm_writes_them() {
        assert_eq!(expand_nodelist("vm").unwrap(), ["vm"]);
        assert_eq!(expand_nodelist("node[01-03,7],login").unwrap(), ["node01", "node02", "node03", "node7", "login"]);
        assert_eq!(expand_nodelist("r[1-2]n[8-9]").unwrap(), ["r1n8", "r1n9", "r2n8", "r2n9"]);
        for bad in ["a,,b", "a[1-2", "a]1", "a[x]", "a[3-1]", ""] {
            assert!(expand_nodelist(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn counts_and_the_allocation() {
        assert_eq!(expand_counts("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert!(expand_counts("2(x3").is_err() && expand_counts("x").is_err());
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let slots = |name: &str, slots| HostSlots { name: name.into(), slots };
        let alloc = allocation(env(&[("SLURM_JOB_NODELIST", "n[1-2]"), ("SLURM_TASKS_PER_NODE", "3,1")])).unwrap();
        assert_eq!(alloc, Some(vec![slots("n1", 3), slots("n2", 1)]));
        let alloc = allocation(env(&[("SLURM_JOB_NODELIST", "n1"), ("SLURM_JOB_CPUS_PER_NODE", "4")])).unwrap();
        assert_eq!(alloc, Some(vec![slots("n1", 4)]));
        assert_eq!(allocation(env(&[])).unwrap(), None);
        let e = allocation(env(&[("SLURM_JOB_NODELIST", "n[1-2]"), ("SLURM_TASKS_PER_NODE", "2")])).unwrap_err();
        assert!(e.contains("gives 1 counts for the 2 nodes"), "{e}");
    }
}
