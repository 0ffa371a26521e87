//! Groups: MPI_Group_* and MPI_Comm_group. A group is an ordered list of distinct processes
//! (`billboard::Process`: a peer number and its generation, so a group kept from a
//! disconnected communicator names the processes that left, not those that took their numbers
//! since); the set operations below are pure functions over such lists, the exported calls
//! store their results in the table behind `MPI_Group` handles.

use std::ffi::c_int;

use billboard::Process;

use crate::abi::*;
use crate::error::{bad_comm, call, err, out, Res};
use crate::state::Mpi;

/// Groups by handle: user groups are direct handles indexing `table`; `MPI_GROUP_EMPTY` is
/// builtin and lives nowhere.
#[derive(Default)]
pub(crate) struct Groups {
    table: Vec<Option<Vec<Process>>>,
    free: Vec<u32>,
}

impl Mpi {
    /// The members of group `h`.
    pub fn group(&self, h: MPI_Group) -> Res<&[Process]> {
        if h == MPI_GROUP_EMPTY {
            return Ok(&[]);
        }
        let found = (handle_kind(h) == HandleKind::Direct && handle_object_type(h) == object_type::GROUP)
            .then(|| self.groups.table.get(handle_index(h) as usize))
            .flatten()
            .and_then(|g| g.as_deref());
        found.ok_or_else(|| bad_group(h))
    }

    /// Stores a group and returns its handle. Every constructor that yields no member
    /// (MPI_Group_incl of none, MPI_Group_excl of all, an empty intersection ...) returns
    /// `MPI_GROUP_EMPTY` itself, as MPICH does, so programs may compare against it.
    pub fn add_group(&mut self, members: Vec<Process>) -> MPI_Group {
        if members.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        let i = crate::state::store(&mut self.groups.table, &mut self.groups.free, members);
        make_handle(HandleKind::Direct, object_type::GROUP, i)
    }

    /// The members of communicator `comm`, in rank order.
    pub fn comm_members(&self, comm: MPI_Comm) -> Res<Vec<Process>> {
        let c = &self.comm_local(comm).ok_or_else(|| bad_comm(comm))?.comm;
        Ok(members_of(c))
    }
}

/// The members of `c` (its local group), in rank order.
pub(crate) fn members_of(c: &billboard::Communicator) -> Vec<Process> {
    (0..c.size()).map(|r| c.process(r)).collect()
}

/// The rank in `c` of each member of `group`; `within` names `c` in the error when a member
/// is not in it (MPI_ERR_GROUP), which also says so when that member was disconnected.
pub(crate) fn ranks_in(c: &billboard::Communicator, group: &[Process], within: &str) -> Res<Vec<usize>> {
    let members = members_of(c);
    group
        .iter()
        .map(|p| {
            members.iter().position(|m| m == p).ok_or_else(|| {
                let gone = if c.exists(*p) { "" } else { " (it was disconnected: it no longer exists)" };
                err(MPI_ERR_GROUP, format!("{p} of the group is not in {within}{gone}"))
            })
        })
        .collect()
}

pub(crate) fn bad_group(h: MPI_Group) -> crate::error::MpiError {
    let what = if h == MPI_GROUP_NULL { "MPI_GROUP_NULL".to_string() } else { format!("{h:#x}") };
    err(MPI_ERR_GROUP, format!("invalid group {what}"))
}

fn check_rank(rank: c_int, size: usize) -> Res<usize> {
    if rank < 0 || rank as usize >= size {
        return Err(err(MPI_ERR_RANK, format!("rank {rank} is not in a group of size {size}")));
    }
    Ok(rank as usize)
}

/// The members at positions `ranks` (each valid and listed once).
pub(crate) fn incl<T: Copy>(members: &[T], ranks: &[c_int]) -> Res<Vec<T>> {
    let mut seen = vec![false; members.len()];
    ranks
        .iter()
        .map(|&r| {
            let r = check_rank(r, members.len())?;
            if std::mem::replace(&mut seen[r], true) {
                return Err(err(MPI_ERR_RANK, format!("rank {r} is listed twice")));
            }
            Ok(members[r])
        })
        .collect()
}

/// The members not at positions `ranks`, in group order.
pub(crate) fn excl<T: Copy>(members: &[T], ranks: &[c_int]) -> Res<Vec<T>> {
    incl(members, ranks)?; // validates: in range, no duplicates
    Ok((0..members.len()).filter(|&i| !ranks.contains(&(i as c_int))).map(|i| members[i]).collect())
}

/// Expands `(first, last, stride)` triplets into the ranks they name, in order.
pub(crate) fn expand_ranges(ranges: &[[c_int; 3]], size: usize) -> Res<Vec<c_int>> {
    let mut out = Vec::new();
    for &[first, last, stride] in ranges {
        if stride == 0 {
            return Err(err(MPI_ERR_ARG, format!("range ({first}, {last}, {stride}) has stride 0")));
        }
        check_rank(first, size)?;
        check_rank(last, size)?;
        if (last - first).signum() * stride.signum() < 0 {
            return Err(err(MPI_ERR_ARG, format!("range ({first}, {last}, {stride}) runs away from its end")));
        }
        let mut r = first as i64;
        while (stride > 0 && r <= last as i64) || (stride < 0 && r >= last as i64) {
            out.push(r as c_int);
            r += stride as i64;
        }
    }
    Ok(out)
}

/// The members of `a`, then those of `b` not in `a`.
pub(crate) fn union<T: Copy + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().copied().chain(b.iter().copied().filter(|x| !a.contains(x))).collect()
}

/// The members of `a` that are in `b`, in `a`'s order.
pub(crate) fn intersection<T: Copy + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().copied().filter(|x| b.contains(x)).collect()
}

/// The members of `a` that are not in `b`, in `a`'s order.
pub(crate) fn difference<T: Copy + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().copied().filter(|x| !b.contains(x)).collect()
}

/// The rank in `b` of each rank `ranks` of `a` (MPI_UNDEFINED if not a member of `b`;
/// MPI_PROC_NULL stays MPI_PROC_NULL).
pub(crate) fn translate<T: Copy + PartialEq>(a: &[T], ranks: &[c_int], b: &[T]) -> Res<Vec<c_int>> {
    ranks
        .iter()
        .map(|&r| {
            if r == MPI_PROC_NULL {
                return Ok(MPI_PROC_NULL);
            }
            let w = a[check_rank(r, a.len())?];
            Ok(b.iter().position(|&x| x == w).map_or(MPI_UNDEFINED, |p| p as c_int))
        })
        .collect()
}

/// MPI_IDENT (same members, same order), MPI_SIMILAR (same members) or MPI_UNEQUAL.
pub(crate) fn compare<T: PartialEq>(a: &[T], b: &[T]) -> c_int {
    if a == b {
        MPI_IDENT
    } else if a.len() == b.len() && a.iter().all(|x| b.contains(x)) {
        MPI_SIMILAR
    } else {
        MPI_UNEQUAL
    }
}

/// Reads `n` ints from C, with `n` checked.
unsafe fn ints<'a>(n: c_int, p: *const c_int) -> Res<&'a [c_int]> {
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("negative count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, "null rank array"));
    }
    // SAFETY: the caller passes an array of n ints (MPI's contract), checked non-null.
    Ok(std::slice::from_raw_parts(p, n as usize))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> c_int {
    call("MPI_Comm_group", comm, |m| {
        let members = m.comm_members(comm)?;
        *out(group, "group")? = m.add_group(members);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_size(group: MPI_Group, size: *mut c_int) -> c_int {
    call("MPI_Group_size", MPI_COMM_WORLD, |m| {
        *out(size, "size")? = m.group(group)?.len() as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_rank(group: MPI_Group, rank: *mut c_int) -> c_int {
    call("MPI_Group_rank", MPI_COMM_WORLD, |m| {
        let me = Process::world(m.world_rank);
        *out(rank, "rank")? = m.group(group)?.iter().position(|&w| w == me).map_or(MPI_UNDEFINED, |p| p as c_int);
        Ok(())
    })
}

/// A call that makes a new group from one group and some ranks.
unsafe fn derive(
    function: &'static str,
    group: MPI_Group,
    newgroup: *mut MPI_Group,
    f: impl FnOnce(&[Process]) -> Res<Vec<Process>>,
) -> c_int {
    call(function, MPI_COMM_WORLD, |m| {
        let members = f(m.group(group)?)?;
        *out(newgroup, "newgroup")? = m.add_group(members);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_incl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    derive("MPI_Group_incl", group, newgroup, |g| incl(g, ints(n, ranks)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_excl(
    group: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    newgroup: *mut MPI_Group,
) -> c_int {
    derive("MPI_Group_excl", group, newgroup, |g| excl(g, ints(n, ranks)?))
}

unsafe fn ranges<'a>(n: c_int, p: *mut [c_int; 3]) -> Res<&'a [[c_int; 3]]> {
    if n < 0 {
        return Err(err(MPI_ERR_ARG, format!("negative range count {n}")));
    }
    if n > 0 && p.is_null() {
        return Err(err(MPI_ERR_ARG, "null range array"));
    }
    // SAFETY: an array of n triplets (MPI's contract), checked non-null when n > 0.
    Ok(if n == 0 { &[] } else { std::slice::from_raw_parts(p, n as usize) })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_incl(
    group: MPI_Group,
    n: c_int,
    r: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    derive("MPI_Group_range_incl", group, newgroup, |g| incl(g, &expand_ranges(ranges(n, r)?, g.len())?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_range_excl(
    group: MPI_Group,
    n: c_int,
    r: *mut [c_int; 3],
    newgroup: *mut MPI_Group,
) -> c_int {
    derive("MPI_Group_range_excl", group, newgroup, |g| excl(g, &expand_ranges(ranges(n, r)?, g.len())?))
}

/// A call that makes a new group from two groups.
unsafe fn combine(
    function: &'static str,
    a: MPI_Group,
    b: MPI_Group,
    newgroup: *mut MPI_Group,
    f: fn(&[Process], &[Process]) -> Vec<Process>,
) -> c_int {
    call(function, MPI_COMM_WORLD, |m| {
        let members = f(m.group(a)?, m.group(b)?);
        *out(newgroup, "newgroup")? = m.add_group(members);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_union(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    combine("MPI_Group_union", a, b, newgroup, union)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_intersection(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    combine("MPI_Group_intersection", a, b, newgroup, intersection)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_difference(a: MPI_Group, b: MPI_Group, newgroup: *mut MPI_Group) -> c_int {
    combine("MPI_Group_difference", a, b, newgroup, difference)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_translate_ranks(
    a: MPI_Group,
    n: c_int,
    ranks: *const c_int,
    b: MPI_Group,
    out: *mut c_int,
) -> c_int {
    call("MPI_Group_translate_ranks", MPI_COMM_WORLD, |m| {
        let t = translate(m.group(a)?, ints(n, ranks)?, m.group(b)?)?;
        if !t.is_empty() {
            if out.is_null() {
                return Err(err(MPI_ERR_ARG, "null output rank array"));
            }
            // SAFETY: the caller's output array holds n ints.
            std::ptr::copy_nonoverlapping(t.as_ptr(), out, t.len());
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_compare(a: MPI_Group, b: MPI_Group, result: *mut c_int) -> c_int {
    call("MPI_Group_compare", MPI_COMM_WORLD, |m| {
        *out(result, "result")? = compare(m.group(a)?, m.group(b)?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Group_free(group: *mut MPI_Group) -> c_int {
    call("MPI_Group_free", MPI_COMM_WORLD, |m| {
        if group.is_null() {
            return Err(err(MPI_ERR_ARG, "null group pointer"));
        }
        let h = *group;
        m.group(h)?;
        if h != MPI_GROUP_EMPTY {
            let i = handle_index(h);
            m.groups.table[i as usize] = None;
            m.groups.free.push(i);
        }
        *group = MPI_GROUP_NULL;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations_keep_the_order_mpi_asks_for() {
        let a = [0, 2, 4, 6];
        let b = [6, 1, 2, 3];
        assert_eq!(union(&a, &b), [0, 2, 4, 6, 1, 3]);
        assert_eq!(intersection(&a, &b), [2, 6]);
        assert_eq!(intersection(&b, &a), [6, 2]);
        assert_eq!(difference(&a, &b), [0, 4]);
        assert_eq!(compare(&a, &a), MPI_IDENT);
        assert_eq!(compare(&a, &[6, 4, 2, 0]), MPI_SIMILAR);
        assert_eq!(compare(&a, &b), MPI_UNEQUAL);
        assert_eq!(compare::<usize>(&[], &[]), MPI_IDENT);
    }

    #[test]
    fn incl_excl_and_ranges() {
        let g = [10, 11, 12, 13, 14];
        assert_eq!(incl(&g, &[4, 0]).unwrap(), [14, 10]);
        assert_eq!(excl(&g, &[4, 0]).unwrap(), [11, 12, 13]);
        assert_eq!(incl(&g, &[5]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(incl(&g, &[1, 1]).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(expand_ranges(&[[0, 4, 2]], 5).unwrap(), [0, 2, 4]);
        assert_eq!(expand_ranges(&[[3, 1, -2], [4, 4, 1]], 5).unwrap(), [3, 1, 4]);
        assert_eq!(expand_ranges(&[[0, 3, 2]], 5).unwrap(), [0, 2]);
        assert_eq!(expand_ranges(&[[0, 3, -1]], 5).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(expand_ranges(&[[0, 3, 0]], 5).unwrap_err().class, MPI_ERR_ARG);
        assert_eq!(expand_ranges(&[[0, 5, 1]], 5).unwrap_err().class, MPI_ERR_RANK);
    }

    /// Peer number 2 given again after its process was disconnected: a group kept from before
    /// names the process that left, not the one that took the number.
    #[test]
    fn a_process_that_left_is_not_the_one_that_took_its_number() {
        let kept = [Process::world(0), Process { peer: 2, generation: 0 }];
        let now = [Process::world(0), Process { peer: 2, generation: 1 }];
        assert_eq!(translate(&kept, &[0, 1], &now).unwrap(), [0, MPI_UNDEFINED]);
        assert_eq!(compare(&kept, &now), MPI_UNEQUAL);
        assert_eq!(intersection(&kept, &now), [Process::world(0)]);
        assert_eq!(union(&kept, &now).len(), 3);
    }

    #[test]
    fn translate_maps_members_non_members_and_proc_null() {
        let a = [0, 1, 2, 3];
        let b = [3, 2];
        assert_eq!(translate(&a, &[3, 0, MPI_PROC_NULL], &b).unwrap(), [0, MPI_UNDEFINED, MPI_PROC_NULL]);
        assert_eq!(translate(&a, &[4], &b).unwrap_err().class, MPI_ERR_RANK);
    }
}
