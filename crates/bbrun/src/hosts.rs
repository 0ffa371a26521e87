//! Which hosts a job runs on and which ranks go where, sans IO: `--host` lists, hostfiles in
//! MPICH's and Open MPI's formats, `-ppn`, and the placement of ranks on hosts.
//!
//! Placement is MPICH's (Hydra's) default: ranks fill the first host's slots in order, then the
//! next host's, and wrap around to the first host when `-n` is more than all slots together.
//! `-ppn N` gives every host N slots whatever the list says. Without `-n`, a job with hosts has
//! as many ranks as slots.
//!
//! A host listed twice gets the slots of both entries, at the place of its first entry (as Open
//! MPI does): one host, one `BB_NODE_ID`.

/// A host and how many ranks it takes per round of placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSlots {
    pub name: String,
    pub slots: usize,
}

/// Where each rank of a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Host names in job order; the index is the host's `BB_NODE_ID`.
    pub hosts: Vec<String>,
    /// `host_of[rank]`: index into `hosts`.
    pub host_of: Vec<usize>,
}

impl Placement {
    /// One host, every rank on it: a job given no hosts.
    pub fn single(name: &str, size: usize) -> Placement {
        Placement { hosts: vec![name.to_owned()], host_of: vec![0; size] }
    }

    /// The world ranks on host `host`, in order.
    pub fn ranks_on(&self, host: usize) -> Vec<usize> {
        (0..self.host_of.len()).filter(|&r| self.host_of[r] == host).collect()
    }
}

/// Parses `--host h1,h2:4,...` (`host` alone is 1 slot).
pub fn parse_host_list(arg: &str) -> Result<Vec<HostSlots>, String> {
    let mut hosts = Vec::new();
    for entry in arg.split(',') {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(format!("--host {arg:?}: an empty host name (two commas, or one at an end?)"));
        }
        let host = mpich_entry(entry).map_err(|why| format!("--host {arg:?}: {why}"))?;
        hosts.push(host);
    }
    Ok(merge_duplicates(hosts))
}

/// Parses a hostfile. One host per line, either MPICH's `host[:slots]` or Open MPI's
/// `host [slots=N] [max_slots=M]` (`max_slots` is accepted and ignored: bbrun never places more
/// than `-n` ranks anyway). `#` starts a comment; blank lines are skipped. `file` names the file
/// in errors, which also give the line number.
pub fn parse_hostfile(text: &str, file: &str) -> Result<Vec<HostSlots>, String> {
    let mut hosts = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let at = |why: String| format!("hostfile {file}, line {}: {why}", index + 1);
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        hosts.push(hostfile_line(line).map_err(at)?);
    }
    if hosts.is_empty() {
        return Err(format!("hostfile {file} lists no host"));
    }
    Ok(merge_duplicates(hosts))
}

fn hostfile_line(line: &str) -> Result<HostSlots, String> {
    let mut words = line.split_whitespace();
    let mut host = mpich_entry(words.next().unwrap_or_default())?;
    let counted = line.split_whitespace().next().is_some_and(|w| w.contains(':'));
    let mut slots_given = false;
    for word in words {
        let (key, value) =
            word.split_once('=').ok_or_else(|| format!("'{word}' is not a 'key=value' setting (one host per line)"))?;
        match key {
            "slots" if counted => return Err(format!("'{word}' repeats the slot count given after ':'")),
            "slots" if slots_given => return Err(format!("'{word}': slots given twice")),
            "slots" => {
                host.slots = slot_count(value)?;
                slots_given = true;
            }
            "max_slots" | "max-slots" => {
                slot_count(value)?;
            }
            _ => return Err(format!("unknown setting '{key}' (bbrun knows 'slots=N' and 'max_slots=N')")),
        }
    }
    Ok(host)
}

/// `host` or `host:slots`.
fn mpich_entry(entry: &str) -> Result<HostSlots, String> {
    let (name, slots) = match entry.split_once(':') {
        Some((name, count)) => (name, slot_count(count)?),
        None => (entry, 1),
    };
    check_name(name)?;
    Ok(HostSlots { name: name.to_owned(), slots })
}

fn slot_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{text}' is not a slot count (a whole number, 1 or more)")),
    }
}

/// Host names end up as arguments of the launcher command (`ssh HOST`): one that starts with
/// `-` would be read as an option, and odd characters are more likely a typo than a host.
fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-@".contains(c);
    if name.is_empty() {
        return Err("an empty host name".into());
    }
    if name.starts_with('-') || !name.chars().all(allowed) {
        return Err(format!(
            "'{name}' is not a host name (letters, digits, '.', '-', '_', '@'; not starting with '-')"
        ));
    }
    Ok(())
}

fn merge_duplicates(hosts: Vec<HostSlots>) -> Vec<HostSlots> {
    let mut merged: Vec<HostSlots> = Vec::new();
    for host in hosts {
        match merged.iter_mut().find(|h| h.name == host.name) {
            Some(first) => first.slots += host.slots,
            None => merged.push(host),
        }
    }
    merged
}

/// Places `size` ranks (all slots when `None`) on `hosts`, with `ppn` overriding every host's
/// slot count.
pub fn place(hosts: &[HostSlots], ppn: Option<usize>, size: Option<usize>) -> Result<Placement, String> {
    if ppn == Some(0) {
        return Err("-ppn must be at least 1".into());
    }
    let slots: Vec<usize> = hosts.iter().map(|h| ppn.unwrap_or(h.slots)).collect();
    let total: usize = slots.iter().sum();
    if total == 0 {
        return Err("no host to run on".into());
    }
    let size = size.unwrap_or(total);
    if size == 0 {
        return Err("-n must be at least 1".into());
    }
    let mut host_of = Vec::with_capacity(size);
    'fill: loop {
        for (host, &count) in slots.iter().enumerate() {
            for _ in 0..count {
                if host_of.len() == size {
                    break 'fill;
                }
                host_of.push(host);
            }
        }
    }
    Ok(Placement { hosts: hosts.iter().map(|h| h.name.clone()).collect(), host_of })
}

/// The `PMI_process_mapping` value MPICH reads to learn which ranks share a node:
/// `(vector,(first node, node count, ranks per node),...)`, one triple per run of consecutive
/// nodes that take equal blocks of consecutive ranks (Hydra's format).
pub fn process_mapping(host_of: &[usize]) -> String {
    // Blocks of consecutive ranks on one host: (host, ranks).
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    for &host in host_of {
        match blocks.last_mut() {
            Some((h, n)) if *h == host => *n += 1,
            _ => blocks.push((host, 1)),
        }
    }
    // Runs of blocks on consecutive hosts with equal block sizes: (first host, hosts, ranks).
    let mut triples: Vec<(usize, usize, usize)> = Vec::new();
    for (host, n) in blocks {
        match triples.last_mut() {
            Some((first, count, per)) if *per == n && *first + *count == host => *count += 1,
            _ => triples.push((host, 1, n)),
        }
    }
    let parts: Vec<String> = triples.iter().map(|(f, c, p)| format!("({f},{c},{p})")).collect();
    format!("(vector,{})", parts.join(","))
}

/// Whether `name` means this machine, whose ranks bbrun starts itself with no launcher
/// command: `localhost`, or the machine's host name (in full or up to the first dot).
pub fn is_this_machine(name: &str, hostname: &str) -> bool {
    let short = hostname.split('.').next().unwrap_or(hostname);
    name == "localhost" || name == hostname || name == short
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, slots: usize) -> HostSlots {
        HostSlots { name: name.into(), slots }
    }

    #[test]
    fn host_lists() {
        assert_eq!(parse_host_list("a,b:2").unwrap(), [h("a", 1), h("b", 2)]);
        assert_eq!(parse_host_list("a:2, b ,a").unwrap(), [h("a", 3), h("b", 1)]);
        let e = parse_host_list("a,,b").unwrap_err();
        assert!(e.contains("empty host name"), "{e}");
        let e = parse_host_list("a:x").unwrap_err();
        assert!(e.contains("'x' is not a slot count"), "{e}");
        assert!(parse_host_list("a:0").unwrap_err().contains("'0'"));
        let e = parse_host_list("-oProxyCommand=x").unwrap_err();
        assert!(e.contains("not a host name"), "{e}");
    }

    #[test]
    fn mpich_hostfiles() {
        let text = "# cluster\nnode1:4\n\nnode2   # one slot\n  node3:2  \n";
        assert_eq!(parse_hostfile(text, "f").unwrap(), [h("node1", 4), h("node2", 1), h("node3", 2)]);
    }

    #[test]
    fn open_mpi_hostfiles() {
        let text = "node1 slots=2 max_slots=8\nnode2 slots=1\nnode3\nnode1 slots=2 # more\n";
        assert_eq!(parse_hostfile(text, "f").unwrap(), [h("node1", 4), h("node2", 1), h("node3", 1)]);
    }

    #[test]
    fn hostfile_errors_name_file_and_line() {
        let e = parse_hostfile("a\nb slots=two\n", "hosts.txt").unwrap_err();
        assert_eq!(e, "hostfile hosts.txt, line 2: 'two' is not a slot count (a whole number, 1 or more)");
        let e = parse_hostfile("a cpus=3", "f").unwrap_err();
        assert!(e.starts_with("hostfile f, line 1: unknown setting 'cpus'"), "{e}");
        let e = parse_hostfile("a:2 slots=2", "f").unwrap_err();
        assert!(e.contains("repeats"), "{e}");
        let e = parse_hostfile("a b", "f").unwrap_err();
        assert!(e.contains("'b' is not a 'key=value'"), "{e}");
        let e = parse_hostfile("# nothing\n\n", "empty").unwrap_err();
        assert_eq!(e, "hostfile empty lists no host");
        let e = parse_hostfile("ok\nbad!name\n", "f").unwrap_err();
        assert!(e.starts_with("hostfile f, line 2: 'bad!name' is not a host name"), "{e}");
    }

    #[test]
    fn placement_fills_slots_in_order_and_wraps() {
        let hosts = [h("a", 2), h("b", 2)];
        assert_eq!(place(&hosts, None, None).unwrap().host_of, [0, 0, 1, 1]);
        assert_eq!(place(&hosts, None, Some(3)).unwrap().host_of, [0, 0, 1]);
        assert_eq!(place(&hosts, None, Some(6)).unwrap().host_of, [0, 0, 1, 1, 0, 0]);
        let one_each = [h("a", 1), h("b", 1)];
        assert_eq!(place(&one_each, None, Some(5)).unwrap().host_of, [0, 1, 0, 1, 0]);
        assert_eq!(place(&one_each, Some(3), None).unwrap().host_of, [0, 0, 0, 1, 1, 1]);
        assert_eq!(place(&one_each, Some(2), Some(3)).unwrap().host_of, [0, 0, 1]);
        assert!(place(&one_each, Some(0), None).is_err());
        let p = place(&hosts, None, Some(5)).unwrap();
        assert_eq!(p.hosts, ["a", "b"]);
        assert_eq!(p.ranks_on(0), [0, 1, 4]);
    }

    #[test]
    fn process_mapping_like_hydra() {
        assert_eq!(process_mapping(&[0, 0, 0]), "(vector,(0,1,3))");
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(process_mapping(&[0, 1, 0, 1]), "(vector,(0,2,1),(0,2,1))");
        assert_eq!(process_mapping(&[0, 0, 1, 1, 0, 0]), "(vector,(0,2,2),(0,1,2))");
        assert_eq!(process_mapping(&[0, 0, 1]), "(vector,(0,1,2),(1,1,1))");
    }

    #[test]
    fn this_machine() {
        assert!(is_this_machine("localhost", "vm.example.org"));
        assert!(is_this_machine("vm", "vm.example.org"));
        assert!(is_this_machine("vm.example.org", "vm.example.org"));
        assert!(!is_this_machine("node2", "vm.example.org"));
    }
}
