//! PVM's message box, kept by the host agent: named classes of stored messages
//! (`pvm_putinfo`, `pvm_recvinfo`, `pvm_delinfo`, `pvm_getmboxinfo`), sans-IO.
//!
//! A class holds entries by index. Flags (PVM's): `PvmMboxMultiInstance` lets a class hold
//! several entries (a put takes the first free index), else a class holds one, at index 0;
//! `PvmMboxOverWritable` lets a later put replace the entry; `PvmMboxPersistent` keeps it
//! after its owner ends (else it goes with its owner); a directed index
//! (`PvmMboxDirectIndex(i)` in the high bits) puts at or reads from that index;
//! `PvmMboxFirstAvail` reads the first entry at or after the index; `PvmMboxReadAndDelete`
//! removes what it read (its owner's right).

use std::collections::BTreeMap;

use crate::error::PvmError;

pub const PERSISTENT: i32 = 1;
pub const MULTI_INSTANCE: i32 = 2;
pub const OVERWRITABLE: i32 = 4;
pub const FIRST_AVAIL: i32 = 8;
pub const READ_AND_DELETE: i32 = 16;
const DIRECT_SHIFT: i32 = 10;

/// One stored message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub owner: i32,
    pub flags: i32,
    pub enc: i32,
    pub data: Vec<u8>,
}

/// A class as `pvm_getmboxinfo` lists it: name, then index, owner and flags of each entry.
pub type ClassInfo = (String, Vec<(i32, i32, i32)>);

#[derive(Default)]
pub struct Mailbox {
    classes: BTreeMap<String, BTreeMap<i32, Entry>>,
}

fn direct_index(flags: i32) -> Option<i32> {
    let i = (flags >> DIRECT_SHIFT) & ((1 << (31 - DIRECT_SHIFT)) - 1);
    (i > 0).then_some(i)
}

impl Mailbox {
    /// Stores a message; its index.
    pub fn put(&mut self, name: &str, owner: i32, flags: i32, enc: i32, data: Vec<u8>) -> Result<i32, PvmError> {
        if name.is_empty() {
            return Err(PvmError::BadParam);
        }
        let class = self.classes.entry(name.to_string()).or_default();
        let index = match direct_index(flags) {
            Some(i) => i,
            None if flags & MULTI_INSTANCE != 0 => (0..).find(|i| !class.contains_key(i)).unwrap_or(0),
            None => 0,
        };
        if let Some(old) = class.get(&index) {
            if old.flags & OVERWRITABLE == 0 && old.owner != owner {
                return Err(PvmError::Denied);
            }
            if old.flags & OVERWRITABLE == 0 {
                return Err(PvmError::Exists);
            }
        }
        class.insert(index, Entry { owner, flags: flags & ((1 << DIRECT_SHIFT) - 1), enc, data });
        Ok(index)
    }

    /// Reads an entry (the first at or after `index` with `PvmMboxFirstAvail`).
    pub fn get(&mut self, name: &str, index: i32, flags: i32, reader: i32) -> Result<Entry, PvmError> {
        let class = self.classes.get_mut(name).ok_or(PvmError::NotFound)?;
        let at = if flags & FIRST_AVAIL != 0 {
            *class.range(index.max(0)..).next().ok_or(PvmError::NotFound)?.0
        } else {
            index
        };
        let e = class.get(&at).ok_or(PvmError::NotFound)?.clone();
        if flags & READ_AND_DELETE != 0 {
            if e.owner != reader && e.flags & OVERWRITABLE == 0 {
                return Err(PvmError::Denied);
            }
            class.remove(&at);
        }
        self.classes.retain(|_, c| !c.is_empty());
        Ok(e)
    }

    /// Removes an entry: its owner's right, or anyone's for an overwritable one.
    pub fn delete(&mut self, name: &str, index: i32, by: i32) -> Result<(), PvmError> {
        let class = self.classes.get_mut(name).ok_or(PvmError::NotFound)?;
        let e = class.get(&index).ok_or(PvmError::NotFound)?;
        if e.owner != by && e.flags & OVERWRITABLE == 0 {
            return Err(PvmError::Denied);
        }
        class.remove(&index);
        self.classes.retain(|_, c| !c.is_empty());
        Ok(())
    }

    /// A task ended: its entries go, save persistent ones.
    pub fn task_gone(&mut self, tid: i32) {
        for class in self.classes.values_mut() {
            class.retain(|_, e| e.owner != tid || e.flags & PERSISTENT != 0);
        }
        self.classes.retain(|_, c| !c.is_empty());
    }

    /// The classes whose names match `pattern` (a glob: `*` any run, `?` any one character).
    pub fn list(&self, pattern: &str) -> Vec<ClassInfo> {
        self.classes
            .iter()
            .filter(|(n, _)| glob(pattern.as_bytes(), n.as_bytes()))
            .map(|(n, c)| (n.clone(), c.iter().map(|(&i, e)| (i, e.owner, e.flags)).collect()))
            .collect()
    }
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_holds_one_entry_unless_multi_instance() {
        let mut m = Mailbox::default();
        assert_eq!(m.put("svc", 1, 0, 0, vec![1]), Ok(0));
        assert_eq!(m.put("svc", 2, 0, 0, vec![2]), Err(PvmError::Denied));
        assert_eq!(m.put("multi", 1, MULTI_INSTANCE, 0, vec![1]), Ok(0));
        assert_eq!(m.put("multi", 2, MULTI_INSTANCE, 0, vec![2]), Ok(1));
        assert_eq!(m.get("multi", 1, 0, 9).unwrap().data, vec![2]);
        assert_eq!(m.get("multi", 0, FIRST_AVAIL, 9).unwrap().owner, 1);
        assert_eq!(m.put("w", 1, OVERWRITABLE, 0, vec![1]), Ok(0));
        assert_eq!(m.put("w", 2, 0, 0, vec![3]), Ok(0), "an overwritable entry is replaced");
        assert_eq!(m.get("w", 0, 0, 9).unwrap().data, vec![3]);
        assert_eq!(m.put("d", 1, 5 << DIRECT_SHIFT, 0, vec![]), Ok(5));
    }

    #[test]
    fn entries_go_with_their_owner_unless_persistent_and_only_the_owner_deletes() {
        let mut m = Mailbox::default();
        m.put("a", 1, 0, 0, vec![]).unwrap();
        m.put("b", 1, PERSISTENT, 0, vec![]).unwrap();
        assert_eq!(m.delete("b", 0, 2), Err(PvmError::Denied));
        assert_eq!(m.get("b", 0, READ_AND_DELETE, 2), Err(PvmError::Denied));
        m.task_gone(1);
        assert_eq!(m.get("a", 0, 0, 2), Err(PvmError::NotFound));
        assert_eq!(m.list("*").len(), 1);
        assert_eq!(m.list("b?").len(), 0);
        assert_eq!(m.delete("b", 0, 1), Ok(()));
        assert!(m.list("*").is_empty());
    }
}
