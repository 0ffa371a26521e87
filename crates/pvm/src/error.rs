//! PVM's error codes (the negative return values of every call) and their texts, as Debian's
//! PVM 3.4.6 prints them.

use std::ffi::c_char;

/// What went wrong, as PVM numbers it. `code()` is the value a C call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PvmError {
    BadParam,
    Mismatch,
    Overflow,
    NoData,
    NoHost,
    NoFile,
    Denied,
    NoMem,
    BadMsg,
    SysErr,
    NoBuf,
    NoSuchBuf,
    NullGroup,
    DupGroup,
    NoGroup,
    NotInGroup,
    NoInst,
    HostFail,
    NoParent,
    NotImpl,
    DSysErr,
    BadVersion,
    OutOfRes,
    DupHost,
    CantStart,
    Already,
    NoTask,
    NotFound,
    Exists,
    /// A code PVM gives no name, chosen by the program's own function and passed on as it
    /// is (a `pvm_recvf` matcher's negative result).
    Code(i32),
}

impl PvmError {
    pub fn code(self) -> i32 {
        use PvmError::*;
        match self {
            BadParam => -2,
            Mismatch => -3,
            Overflow => -4,
            NoData => -5,
            NoHost => -6,
            NoFile => -7,
            Denied => -8,
            NoMem => -10,
            BadMsg => -12,
            SysErr => -14,
            NoBuf => -15,
            NoSuchBuf => -16,
            NullGroup => -17,
            DupGroup => -18,
            NoGroup => -19,
            NotInGroup => -20,
            NoInst => -21,
            HostFail => -22,
            NoParent => -23,
            NotImpl => -24,
            DSysErr => -25,
            BadVersion => -26,
            OutOfRes => -27,
            DupHost => -28,
            CantStart => -29,
            Already => -30,
            NoTask => -31,
            NotFound => -32,
            Exists => -33,
            Code(c) => c,
        }
    }

    /// A negative code as it is: its name where PVM has one, else [`PvmError::Code`].
    pub fn exactly(code: i32) -> PvmError {
        match PvmError::from_code(code) {
            e if e.code() == code => e,
            _ => PvmError::Code(code),
        }
    }

    /// The error a code names (a code from the wire or from the agent).
    pub fn from_code(code: i32) -> PvmError {
        use PvmError::*;
        [
            BadParam, Mismatch, Overflow, NoData, NoHost, NoFile, Denied, NoMem, BadMsg, SysErr, NoBuf, NoSuchBuf,
            NullGroup, DupGroup, NoGroup, NotInGroup, NoInst, HostFail, NoParent, NotImpl, DSysErr, BadVersion,
            OutOfRes, DupHost, CantStart, Already, NoTask, NotFound, Exists,
        ]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(SysErr)
    }

    pub fn text(self) -> &'static str {
        text_of(self.code())
    }
}

/// PVM's text for an error code, `"Error N"` for codes it leaves unnamed.
pub fn text_of(code: i32) -> &'static str {
    usize::try_from(-i64::from(code)).ok().and_then(|i| ERRLIST.get(i)).map_or("Unknown error", |s| {
        let s = s.to_bytes();
        std::str::from_utf8(s).unwrap_or("Unknown error")
    })
}

/// The texts, indexed by minus the code (PVM's `pvm_errlist`, whose entries past
/// `PvmExists` name internal message classes).
const ERRLIST: [&std::ffi::CStr; 37] = [
    c"Error 0",
    c"Error 1",
    c"Bad parameter",
    c"Parameter mismatch",
    c"Value too large",
    c"End of buffer",
    c"No such host",
    c"No such file",
    c"Permission denied",
    c"Error 9",
    c"Malloc failed",
    c"Error 11",
    c"Can't decode message",
    c"Error 13",
    c"Can't contact local daemon",
    c"No current buffer",
    c"No such buffer",
    c"Null group name",
    c"Already in group",
    c"No such group",
    c"Not in group",
    c"No such instance",
    c"Host failed",
    c"No parent task",
    c"Not implemented",
    c"Pvmd system error",
    c"Version mismatch",
    c"Out of resources",
    c"Duplicate host",
    c"Can't start pvmd",
    c"Already in progress",
    c"No such task",
    c"Not Found",
    c"Already Exists",
    c"Hoster must run on master host",
    c"Spawning parent set PvmNoParent",
    c"Master Host IP Address is Loopback! (See pvm3/Readme)",
];

/// A C pointer that may live in a `static` (the strings it points to are `'static`).
#[repr(transparent)]
pub struct StaticStr(*const c_char);

impl StaticStr {
    pub fn as_ptr(&self) -> *const c_char {
        self.0
    }
}
// SAFETY: it points at immutable 'static string constants only.
unsafe impl Sync for StaticStr {}

/// `pvm_errlist` and `pvm_nerr`: data symbols the console and some programs read directly.
#[no_mangle]
pub static pvm_errlist: [StaticStr; 37] = {
    let mut list = [const { StaticStr(std::ptr::null()) }; 37];
    let mut i = 0;
    while i < 37 {
        list[i] = StaticStr(ERRLIST[i].as_ptr());
        i += 1;
    }
    list
};

#[no_mangle]
pub static pvm_nerr: i32 = 36;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_back_and_has_its_text() {
        for code in -33..=-2 {
            let e = PvmError::from_code(code);
            if e.code() == code {
                assert!(!e.text().starts_with("Error "), "{code} has a name");
            }
        }
        assert_eq!(PvmError::NoTask.text(), "No such task");
        assert_eq!(text_of(-14), "Can't contact local daemon");
        assert_eq!(text_of(5), "Unknown error");
        assert_eq!(text_of(-99), "Unknown error");
        assert_eq!(PvmError::exactly(-99).code(), -99);
        assert_eq!(PvmError::exactly(-5), PvmError::NoData);
    }
}
