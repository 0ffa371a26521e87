//! MPICH's binary interface, as Rust constants: the facts a program compiled against Debian's
//! MPICH 4.0.2 `mpi.h` has baked into its object code, which this library must honour.
//!
//! Every value here was read from `/usr/include/x86_64-linux-gnu/mpich/mpi.h` (and `mpio.h`) of
//! Debian's `libmpich-dev` 4.0.2, the exported objects from
//! `readelf --dyn-syms /usr/lib/x86_64-linux-gnu/libmpich.so.12`. Billboard's own header,
//! `crates/mpi/include/mpi.h`, states the same facts for C; `crates/mpi/tests/abi.rs` compiles
//! `tests/c/abi/constants.c` against both headers and checks every entry of [`ABI_FACTS`]
//! against the result, so this file, our header and MPICH's header cannot drift apart.
//!
//! # Handle encoding
//!
//! A handle is a C `int` (`i32` here). MPICH's encoding, from the comments in its `mpi.h` ("builtin
//! kind (0x1 in bit 30-31)", "Keyval object (0x9 in bits 26-29)", "errhandler (0x5 in bits
//! 26-29)") and its `src/include/mpir_objects.h` (`HANDLE_KIND_SHIFT 30`,
//! `HANDLE_MPI_KIND_SHIFT 26`, the `MPII_Object_kind` numbers):
//!
//! ```text
//!  31 30 | 29 .. 26    | 25 .. 16            | 15 .. 8           | 7 .. 0
//!  kind  | object type | 0 (keyvals: 25..22  | builtin datatype: | index
//!        |             |  = object kind)     | size in bytes     |
//! ```
//!
//! * kind: 0 invalid (the `*_NULL` handles), 1 builtin (predefined objects), 2 direct (an index
//!   into the library's preallocated table), 3 indirect (block and index; MPICH-private).
//! * object type: [`object_type`] constants, e.g. 1 communicator, 3 datatype.
//! * Builtin datatypes carry their size in bits 15..8 (`MPIR_Datatype_get_basic_size` in
//!   MPICH), so `MPI_INT` = `0x4c00_0405` is a 4-byte type; see [`builtin_datatype_size`].
//! * The pair types `MPI_FLOAT_INT` .. `MPI_LONG_DOUBLE_INT` are *direct* handles
//!   `0x8c00_0000` .. `0x8c00_0004`: MPICH builds them as structs at start-up in its direct
//!   table. So the first handle this library may give a user-built datatype is
//!   [`FIRST_USER_DATATYPE`]. (`MPI_2INT` is an ordinary builtin of size 8.)
//!
//! Non-predefined handles (user communicators, requests, ...) never appear in a program's
//! object code, so their numbering is ours, as long as the kind and object-type bits stay
//! MPICH's (programs compare handles only with the predefined values).
//!
//! # Status
//!
//! [`MPI_Status`] is five `int`s (20 bytes). The first two hold the received size in bytes
//! (`count_lo` = low 32 bits; `count_hi_and_cancelled` = higher bits << 1 | cancelled flag), as
//! MPICH's `src/include/mpir_status.h` lays them out; see [`MPI_Status::byte_count`].

// The names are the C names on purpose: a reader can grep one name across C and Rust.
#![allow(non_camel_case_types, non_snake_case)]

use core::mem::{offset_of, size_of};

/// Address-sized integer (`long` in MPICH's x86_64 build).
pub type MPI_Aint = i64;
/// File offset (`long`).
pub type MPI_Offset = i64;
/// Large count (`long`).
pub type MPI_Count = i64;
/// Fortran INTEGER (`int`).
pub type MPI_Fint = i32;
/// Every handle type is a C `int`.
pub type MPI_Comm = i32;
pub type MPI_Group = i32;
pub type MPI_Datatype = i32;
pub type MPI_Op = i32;
pub type MPI_Errhandler = i32;
pub type MPI_Info = i32;
pub type MPI_Win = i32;
pub type MPI_Session = i32;
pub type MPI_Request = i32;
pub type MPI_Message = i32;

/// The C `MPI_Status`, field for field (`typedef struct MPI_Status { int count_lo; ... }`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: i32,
    pub count_hi_and_cancelled: i32,
    pub MPI_SOURCE: i32,
    pub MPI_TAG: i32,
    pub MPI_ERROR: i32,
}

// A program allocates these itself (often arrays of them), so the size is ABI.
const _: () = assert!(size_of::<MPI_Status>() == 20);
const _: () = assert!(core::mem::align_of::<MPI_Status>() == 4);

impl MPI_Status {
    /// Received size in bytes, as MPICH stores it (`MPIR_STATUS_GET_COUNT`).
    pub const fn byte_count(&self) -> i64 {
        let hi = ((self.count_hi_and_cancelled as u32) >> 1) as u64;
        ((hi << 32) + self.count_lo as u32 as u64) as i64
    }

    /// Stores a non-negative byte count, keeping the cancelled flag (`MPIR_STATUS_SET_COUNT`).
    pub fn set_byte_count(&mut self, bytes: i64) {
        debug_assert!(bytes >= 0, "MPICH's encoding has no room for a negative count");
        let b = bytes as u64;
        self.count_lo = b as u32 as i32;
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & 1) | (((b >> 32) << 1) as u32 as i32);
    }

    /// The cancelled flag: bit 0 of `count_hi_and_cancelled`.
    pub const fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 != 0
    }

    pub fn set_cancelled(&mut self, cancelled: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | cancelled as i32;
    }
}

// ---- Sentinel addresses. The C macros are pointers; programs pass them and the library
// compares the pointer it receives, so these are the numeric addresses: `p as isize == ...`.

/// `MPI_BOTTOM`, `(void *)0`: displacements are absolute addresses.
pub const MPI_BOTTOM: isize = 0;
/// `MPI_IN_PLACE`, `(void *)-1`.
pub const MPI_IN_PLACE: isize = -1;
/// `MPI_STATUS_IGNORE`, `(MPI_Status *)1`.
pub const MPI_STATUS_IGNORE: isize = 1;
/// `MPI_STATUSES_IGNORE`, `(MPI_Status *)1`: the same address as `MPI_STATUS_IGNORE`.
pub const MPI_STATUSES_IGNORE: isize = 1;
/// `MPI_ERRCODES_IGNORE`, `(int *)0`.
pub const MPI_ERRCODES_IGNORE: isize = 0;
/// `MPI_ARGV_NULL`, `(char **)0`.
pub const MPI_ARGV_NULL: isize = 0;
/// `MPI_ARGVS_NULL`, `(char ***)0`.
pub const MPI_ARGVS_NULL: isize = 0;
/// `MPI_FILE_NULL`, `(MPI_File)0` (a pointer handle, unlike the others).
pub const MPI_FILE_NULL: isize = 0;
/// The four tool-interface null handles are null pointers.
pub const MPI_T_ENUM_NULL: isize = 0;
pub const MPI_T_CVAR_HANDLE_NULL: isize = 0;
pub const MPI_T_PVAR_HANDLE_NULL: isize = 0;
pub const MPI_T_PVAR_SESSION_NULL: isize = 0;

/// The standard version Billboard declares in its `mpi.h` and reports from `MPI_Get_version`:
/// 4.0, as MPICH 4.0.2.
pub const MPI_VERSION: i32 = 4;
pub const MPI_SUBVERSION: i32 = 0;

// ======== Constants, in the order and groups of mpi.h

// ---- Null handles: kind 00, object type in bits 29-26, index 0.

pub const MPI_COMM_NULL: i32 = 0x0400_0000;
pub const MPI_GROUP_NULL: i32 = 0x0800_0000;
pub const MPI_DATATYPE_NULL: i32 = 0x0c00_0000;
pub const MPI_ERRHANDLER_NULL: i32 = 0x1400_0000;
pub const MPI_OP_NULL: i32 = 0x1800_0000;
pub const MPI_INFO_NULL: i32 = 0x1c00_0000;
pub const MPI_WIN_NULL: i32 = 0x2000_0000;
pub const MPI_KEYVAL_INVALID: i32 = 0x2400_0000;
pub const MPI_REQUEST_NULL: i32 = 0x2c00_0000;
pub const MPI_MESSAGE_NULL: i32 = 0x2c00_0000;
pub const MPI_SESSION_NULL: i32 = 0x3800_0000;
pub const MPI_MESSAGE_NO_PROC: i32 = 0x6c00_0000;

// ---- Predefined objects (builtin handles: kind 01)

pub const MPI_COMM_WORLD: i32 = 0x4400_0000;
pub const MPI_COMM_SELF: i32 = 0x4400_0001;
pub const MPI_GROUP_EMPTY: i32 = 0x4800_0000;
pub const MPI_INFO_ENV: i32 = 0x5c00_0001;
pub const MPI_ERRORS_ARE_FATAL: i32 = 0x5400_0000;
pub const MPI_ERRORS_RETURN: i32 = 0x5400_0001;
pub const MPI_ERRORS_ABORT: i32 = 0x5400_0003;

// ---- Predefined datatypes: builtin, bits 15-8 = size in bytes, bits 7-0 = MPICH's index.

pub const MPI_CHAR: i32 = 0x4c00_0101;
pub const MPI_SIGNED_CHAR: i32 = 0x4c00_0118;
pub const MPI_UNSIGNED_CHAR: i32 = 0x4c00_0102;
pub const MPI_BYTE: i32 = 0x4c00_010d;
pub const MPI_WCHAR: i32 = 0x4c00_040e;
pub const MPI_SHORT: i32 = 0x4c00_0203;
pub const MPI_UNSIGNED_SHORT: i32 = 0x4c00_0204;
pub const MPI_INT: i32 = 0x4c00_0405;
pub const MPI_UNSIGNED: i32 = 0x4c00_0406;
pub const MPI_LONG: i32 = 0x4c00_0807;
pub const MPI_UNSIGNED_LONG: i32 = 0x4c00_0808;
pub const MPI_LONG_LONG_INT: i32 = 0x4c00_0809;
pub const MPI_LONG_LONG: i32 = 0x4c00_0809;
pub const MPI_UNSIGNED_LONG_LONG: i32 = 0x4c00_0819;
pub const MPI_FLOAT: i32 = 0x4c00_040a;
pub const MPI_DOUBLE: i32 = 0x4c00_080b;
pub const MPI_LONG_DOUBLE: i32 = 0x4c00_100c;
pub const MPI_PACKED: i32 = 0x4c00_010f;
pub const MPI_LB: i32 = 0x4c00_0010;
pub const MPI_UB: i32 = 0x4c00_0011;
pub const MPI_FLOAT_INT: i32 = 0x8c00_0000_u32 as i32;
pub const MPI_DOUBLE_INT: i32 = 0x8c00_0001_u32 as i32;
pub const MPI_LONG_INT: i32 = 0x8c00_0002_u32 as i32;
pub const MPI_SHORT_INT: i32 = 0x8c00_0003_u32 as i32;
pub const MPI_LONG_DOUBLE_INT: i32 = 0x8c00_0004_u32 as i32;
pub const MPI_2INT: i32 = 0x4c00_0816;
pub const MPI_CHARACTER: i32 = 0x4c00_011a;
pub const MPI_LOGICAL: i32 = 0x4c00_041d;
pub const MPI_INTEGER: i32 = 0x4c00_041b;
pub const MPI_REAL: i32 = 0x4c00_041c;
pub const MPI_DOUBLE_PRECISION: i32 = 0x4c00_081f;
pub const MPI_COMPLEX: i32 = 0x4c00_081e;
pub const MPI_DOUBLE_COMPLEX: i32 = 0x4c00_1022;
pub const MPI_2INTEGER: i32 = 0x4c00_0820;
pub const MPI_2REAL: i32 = 0x4c00_0821;
pub const MPI_2DOUBLE_PRECISION: i32 = 0x4c00_1023;
pub const MPI_REAL4: i32 = 0x4c00_0427;
pub const MPI_REAL8: i32 = 0x4c00_0829;
pub const MPI_REAL16: i32 = 0x4c00_102b;
pub const MPI_COMPLEX8: i32 = 0x4c00_0828;
pub const MPI_COMPLEX16: i32 = 0x4c00_102a;
pub const MPI_COMPLEX32: i32 = 0x4c00_202c;
pub const MPI_INTEGER1: i32 = 0x4c00_012d;
pub const MPI_INTEGER2: i32 = 0x4c00_022f;
pub const MPI_INTEGER4: i32 = 0x4c00_0430;
pub const MPI_INTEGER8: i32 = 0x4c00_0831;
pub const MPI_INTEGER16: i32 = 0x0c00_0000;
pub const MPI_INT8_T: i32 = 0x4c00_0137;
pub const MPI_INT16_T: i32 = 0x4c00_0238;
pub const MPI_INT32_T: i32 = 0x4c00_0439;
pub const MPI_INT64_T: i32 = 0x4c00_083a;
pub const MPI_UINT8_T: i32 = 0x4c00_013b;
pub const MPI_UINT16_T: i32 = 0x4c00_023c;
pub const MPI_UINT32_T: i32 = 0x4c00_043d;
pub const MPI_UINT64_T: i32 = 0x4c00_083e;
pub const MPI_C_BOOL: i32 = 0x4c00_013f;
pub const MPI_C_FLOAT_COMPLEX: i32 = 0x4c00_0840;
pub const MPI_C_COMPLEX: i32 = 0x4c00_0840;
pub const MPI_C_DOUBLE_COMPLEX: i32 = 0x4c00_1041;
pub const MPI_C_LONG_DOUBLE_COMPLEX: i32 = 0x4c00_2042;
pub const MPI_AINT: i32 = 0x4c00_0843;
pub const MPI_OFFSET: i32 = 0x4c00_0844;
pub const MPI_COUNT: i32 = 0x4c00_0845;
pub const MPI_CXX_BOOL: i32 = 0x4c00_0133;
pub const MPI_CXX_FLOAT_COMPLEX: i32 = 0x4c00_0834;
pub const MPI_CXX_DOUBLE_COMPLEX: i32 = 0x4c00_1035;
pub const MPI_CXX_LONG_DOUBLE_COMPLEX: i32 = 0x4c00_2036;
pub const MPI_TYPECLASS_REAL: i32 = 1;
pub const MPI_TYPECLASS_INTEGER: i32 = 2;
pub const MPI_TYPECLASS_COMPLEX: i32 = 3;

// ---- Predefined reduction operations (builtin, object type 6). MPICH writes these without

pub const MPI_MAX: i32 = 0x5800_0001;
pub const MPI_MIN: i32 = 0x5800_0002;
pub const MPI_SUM: i32 = 0x5800_0003;
pub const MPI_PROD: i32 = 0x5800_0004;
pub const MPI_LAND: i32 = 0x5800_0005;
pub const MPI_BAND: i32 = 0x5800_0006;
pub const MPI_LOR: i32 = 0x5800_0007;
pub const MPI_BOR: i32 = 0x5800_0008;
pub const MPI_LXOR: i32 = 0x5800_0009;
pub const MPI_BXOR: i32 = 0x5800_000a;
pub const MPI_MINLOC: i32 = 0x5800_000b;
pub const MPI_MAXLOC: i32 = 0x5800_000c;
pub const MPI_REPLACE: i32 = 0x5800_000d;
pub const MPI_NO_OP: i32 = 0x5800_000e;

// ---- Special ranks, tags, counts and addresses

pub const MPI_PROC_NULL: i32 = -1;
pub const MPI_ANY_SOURCE: i32 = -2;
pub const MPI_ROOT: i32 = -3;
pub const MPI_ANY_TAG: i32 = -1;
pub const MPI_UNDEFINED: i32 = -32766;

// ---- Objects the library exports. Programs read these variables at run time, so the library

pub const MPI_F_STATUS_SIZE: i32 = 5;
pub const MPI_F_SOURCE: i32 = 2;
pub const MPI_F_TAG: i32 = 3;
pub const MPI_F_ERROR: i32 = 4;

// ---- Error classes. MPI_Error_class returns these; an error code may also be one of them.

pub const MPI_SUCCESS: i32 = 0;
pub const MPI_ERR_BUFFER: i32 = 1;
pub const MPI_ERR_COUNT: i32 = 2;
pub const MPI_ERR_TYPE: i32 = 3;
pub const MPI_ERR_TAG: i32 = 4;
pub const MPI_ERR_COMM: i32 = 5;
pub const MPI_ERR_RANK: i32 = 6;
pub const MPI_ERR_ROOT: i32 = 7;
pub const MPI_ERR_GROUP: i32 = 8;
pub const MPI_ERR_OP: i32 = 9;
pub const MPI_ERR_TOPOLOGY: i32 = 10;
pub const MPI_ERR_DIMS: i32 = 11;
pub const MPI_ERR_ARG: i32 = 12;
pub const MPI_ERR_UNKNOWN: i32 = 13;
pub const MPI_ERR_TRUNCATE: i32 = 14;
pub const MPI_ERR_OTHER: i32 = 15;
pub const MPI_ERR_INTERN: i32 = 16;
pub const MPI_ERR_IN_STATUS: i32 = 17;
pub const MPI_ERR_PENDING: i32 = 18;
pub const MPI_ERR_REQUEST: i32 = 19;
pub const MPI_ERR_ACCESS: i32 = 20;
pub const MPI_ERR_AMODE: i32 = 21;
pub const MPI_ERR_BAD_FILE: i32 = 22;
pub const MPI_ERR_CONVERSION: i32 = 23;
pub const MPI_ERR_DUP_DATAREP: i32 = 24;
pub const MPI_ERR_FILE_EXISTS: i32 = 25;
pub const MPI_ERR_FILE_IN_USE: i32 = 26;
pub const MPI_ERR_FILE: i32 = 27;
pub const MPI_ERR_INFO: i32 = 28;
pub const MPI_ERR_INFO_KEY: i32 = 29;
pub const MPI_ERR_INFO_VALUE: i32 = 30;
pub const MPI_ERR_INFO_NOKEY: i32 = 31;
pub const MPI_ERR_IO: i32 = 32;
pub const MPI_ERR_NAME: i32 = 33;
pub const MPI_ERR_NO_MEM: i32 = 34;
pub const MPI_ERR_NOT_SAME: i32 = 35;
pub const MPI_ERR_NO_SPACE: i32 = 36;
pub const MPI_ERR_NO_SUCH_FILE: i32 = 37;
pub const MPI_ERR_PORT: i32 = 38;
pub const MPI_ERR_QUOTA: i32 = 39;
pub const MPI_ERR_READ_ONLY: i32 = 40;
pub const MPI_ERR_SERVICE: i32 = 41;
pub const MPI_ERR_SPAWN: i32 = 42;
pub const MPI_ERR_UNSUPPORTED_DATAREP: i32 = 43;
pub const MPI_ERR_UNSUPPORTED_OPERATION: i32 = 44;
pub const MPI_ERR_WIN: i32 = 45;
pub const MPI_ERR_BASE: i32 = 46;
pub const MPI_ERR_LOCKTYPE: i32 = 47;
pub const MPI_ERR_KEYVAL: i32 = 48;
pub const MPI_ERR_RMA_CONFLICT: i32 = 49;
pub const MPI_ERR_RMA_SYNC: i32 = 50;
pub const MPI_ERR_SIZE: i32 = 51;
pub const MPI_ERR_DISP: i32 = 52;
pub const MPI_ERR_ASSERT: i32 = 53;
pub const MPI_ERR_RMA_RANGE: i32 = 55;
pub const MPI_ERR_RMA_ATTACH: i32 = 56;
pub const MPI_ERR_RMA_SHARED: i32 = 57;
pub const MPI_ERR_RMA_FLAVOR: i32 = 58;
pub const MPI_T_ERR_MEMORY: i32 = 59;
pub const MPI_T_ERR_NOT_INITIALIZED: i32 = 60;
pub const MPI_T_ERR_CANNOT_INIT: i32 = 61;
pub const MPI_T_ERR_INVALID_INDEX: i32 = 62;
pub const MPI_T_ERR_INVALID_ITEM: i32 = 63;
pub const MPI_T_ERR_INVALID_HANDLE: i32 = 64;
pub const MPI_T_ERR_OUT_OF_HANDLES: i32 = 65;
pub const MPI_T_ERR_OUT_OF_SESSIONS: i32 = 66;
pub const MPI_T_ERR_INVALID_SESSION: i32 = 67;
pub const MPI_T_ERR_CVAR_SET_NOT_NOW: i32 = 68;
pub const MPI_T_ERR_CVAR_SET_NEVER: i32 = 69;
pub const MPI_T_ERR_PVAR_NO_STARTSTOP: i32 = 70;
pub const MPI_T_ERR_PVAR_NO_WRITE: i32 = 71;
pub const MPI_T_ERR_PVAR_NO_ATOMIC: i32 = 72;
pub const MPI_T_ERR_INVALID_NAME: i32 = 73;
pub const MPI_T_ERR_INVALID: i32 = 74;
pub const MPI_ERR_SESSION: i32 = 75;
pub const MPI_ERR_PROC_ABORTED: i32 = 76;
pub const MPI_ERR_VALUE_TOO_LARGE: i32 = 77;
pub const MPI_T_ERR_NOT_SUPPORTED: i32 = 78;
pub const MPIX_ERR_PROC_FAILED: i32 = 101;
pub const MPIX_ERR_PROC_FAILED_PENDING: i32 = 102;
pub const MPIX_ERR_REVOKED: i32 = 103;
pub const MPIX_ERR_EAGAIN: i32 = 104;
pub const MPIX_ERR_NOREQ: i32 = 105;
pub const MPI_ERR_LASTCODE: i32 = 0x3fff_ffff;

// ---- Predefined attribute keys. Builtin keyvals (object type 9); bits 25-22 say which object

pub const MPI_TAG_UB: i32 = 0x6440_0001;
pub const MPI_HOST: i32 = 0x6440_0003;
pub const MPI_IO: i32 = 0x6440_0005;
pub const MPI_WTIME_IS_GLOBAL: i32 = 0x6440_0007;
pub const MPI_UNIVERSE_SIZE: i32 = 0x6440_0009;
pub const MPI_LASTUSEDCODE: i32 = 0x6440_000b;
pub const MPI_APPNUM: i32 = 0x6440_000d;
pub const MPI_WIN_BASE: i32 = 0x6600_0001;
pub const MPI_WIN_SIZE: i32 = 0x6600_0003;
pub const MPI_WIN_DISP_UNIT: i32 = 0x6600_0005;
pub const MPI_WIN_CREATE_FLAVOR: i32 = 0x6600_0007;
pub const MPI_WIN_MODEL: i32 = 0x6600_0009;

// ---- Limits: sizes of the buffers programs pass in (each includes the terminating NUL except

pub const MPI_MAX_PROCESSOR_NAME: i32 = 128;
pub const MPI_MAX_LIBRARY_VERSION_STRING: i32 = 8192;
pub const MPI_MAX_ERROR_STRING: i32 = 512;
pub const MPI_MAX_PORT_NAME: i32 = 256;
pub const MPI_MAX_OBJECT_NAME: i32 = 128;
pub const MPI_MAX_INFO_KEY: i32 = 255;
pub const MPI_MAX_INFO_VAL: i32 = 1024;
pub const MPI_MAX_DATAREP_STRING: i32 = 128;
pub const MPI_MAX_STRINGTAG_LEN: i32 = 256;
pub const MPI_MAX_PSET_NAME_LEN: i32 = 256;
pub const MPI_BSEND_OVERHEAD: i32 = 96;

// ---- Small enumerations

pub const MPI_THREAD_SINGLE: i32 = 0;
pub const MPI_THREAD_FUNNELED: i32 = 1;
pub const MPI_THREAD_SERIALIZED: i32 = 2;
pub const MPI_THREAD_MULTIPLE: i32 = 3;
pub const MPI_IDENT: i32 = 0;
pub const MPI_CONGRUENT: i32 = 1;
pub const MPI_SIMILAR: i32 = 2;
pub const MPI_UNEQUAL: i32 = 3;
pub const MPI_GRAPH: i32 = 1;
pub const MPI_CART: i32 = 2;
pub const MPI_DIST_GRAPH: i32 = 3;
pub const MPI_COMBINER_NAMED: i32 = 1;
pub const MPI_COMBINER_DUP: i32 = 2;
pub const MPI_COMBINER_CONTIGUOUS: i32 = 3;
pub const MPI_COMBINER_VECTOR: i32 = 4;
pub const MPI_COMBINER_HVECTOR_INTEGER: i32 = 5;
pub const MPI_COMBINER_HVECTOR: i32 = 6;
pub const MPI_COMBINER_INDEXED: i32 = 7;
pub const MPI_COMBINER_HINDEXED_INTEGER: i32 = 8;
pub const MPI_COMBINER_HINDEXED: i32 = 9;
pub const MPI_COMBINER_INDEXED_BLOCK: i32 = 10;
pub const MPI_COMBINER_STRUCT_INTEGER: i32 = 11;
pub const MPI_COMBINER_STRUCT: i32 = 12;
pub const MPI_COMBINER_SUBARRAY: i32 = 13;
pub const MPI_COMBINER_DARRAY: i32 = 14;
pub const MPI_COMBINER_F90_REAL: i32 = 15;
pub const MPI_COMBINER_F90_COMPLEX: i32 = 16;
pub const MPI_COMBINER_F90_INTEGER: i32 = 17;
pub const MPI_COMBINER_RESIZED: i32 = 18;
pub const MPI_COMBINER_HINDEXED_BLOCK: i32 = 19;
pub const MPI_ORDER_C: i32 = 56;
pub const MPI_ORDER_FORTRAN: i32 = 57;
pub const MPI_DISTRIBUTE_BLOCK: i32 = 121;
pub const MPI_DISTRIBUTE_CYCLIC: i32 = 122;
pub const MPI_DISTRIBUTE_NONE: i32 = 123;
pub const MPI_DISTRIBUTE_DFLT_DARG: i32 = -49767;
pub const MPI_COMM_TYPE_SHARED: i32 = 1;
pub const MPI_COMM_TYPE_HW_GUIDED: i32 = 2;
pub const MPI_COMM_TYPE_HW_UNGUIDED: i32 = 3;
pub const MPI_MODE_NOCHECK: i32 = 1024;
pub const MPI_MODE_NOSTORE: i32 = 2048;
pub const MPI_MODE_NOPUT: i32 = 4096;
pub const MPI_MODE_NOPRECEDE: i32 = 8192;
pub const MPI_MODE_NOSUCCEED: i32 = 16384;
pub const MPI_LOCK_EXCLUSIVE: i32 = 234;
pub const MPI_LOCK_SHARED: i32 = 235;
pub const MPI_WIN_FLAVOR_CREATE: i32 = 1;
pub const MPI_WIN_FLAVOR_ALLOCATE: i32 = 2;
pub const MPI_WIN_FLAVOR_DYNAMIC: i32 = 3;
pub const MPI_WIN_FLAVOR_SHARED: i32 = 4;
pub const MPI_WIN_SEPARATE: i32 = 1;
pub const MPI_WIN_UNIFIED: i32 = 2;
pub const MPI_MODE_CREATE: i32 = 1;
pub const MPI_MODE_RDONLY: i32 = 2;
pub const MPI_MODE_WRONLY: i32 = 4;
pub const MPI_MODE_RDWR: i32 = 8;
pub const MPI_MODE_DELETE_ON_CLOSE: i32 = 16;
pub const MPI_MODE_UNIQUE_OPEN: i32 = 32;
pub const MPI_MODE_EXCL: i32 = 64;
pub const MPI_MODE_APPEND: i32 = 128;
pub const MPI_MODE_SEQUENTIAL: i32 = 256;
pub const MPI_SEEK_SET: i32 = 600;
pub const MPI_SEEK_CUR: i32 = 602;
pub const MPI_SEEK_END: i32 = 604;
pub const MPI_DISPLACEMENT_CURRENT: i32 = -54278278;

// ---- Tool information interface (MPI_T) constants. MPICH starts each list at an odd number

pub const MPI_T_VERBOSITY_INVALID: i32 = 0;
pub const MPI_T_VERBOSITY_USER_BASIC: i32 = 221;
pub const MPI_T_VERBOSITY_USER_DETAIL: i32 = 222;
pub const MPI_T_VERBOSITY_USER_ALL: i32 = 223;
pub const MPI_T_VERBOSITY_TUNER_BASIC: i32 = 224;
pub const MPI_T_VERBOSITY_TUNER_DETAIL: i32 = 225;
pub const MPI_T_VERBOSITY_TUNER_ALL: i32 = 226;
pub const MPI_T_VERBOSITY_MPIDEV_BASIC: i32 = 227;
pub const MPI_T_VERBOSITY_MPIDEV_DETAIL: i32 = 228;
pub const MPI_T_VERBOSITY_MPIDEV_ALL: i32 = 229;
pub const MPI_T_BIND_INVALID: i32 = 0;
pub const MPI_T_BIND_NO_OBJECT: i32 = 9700;
pub const MPI_T_BIND_MPI_COMM: i32 = 9701;
pub const MPI_T_BIND_MPI_DATATYPE: i32 = 9702;
pub const MPI_T_BIND_MPI_ERRHANDLER: i32 = 9703;
pub const MPI_T_BIND_MPI_FILE: i32 = 9704;
pub const MPI_T_BIND_MPI_GROUP: i32 = 9705;
pub const MPI_T_BIND_MPI_OP: i32 = 9706;
pub const MPI_T_BIND_MPI_REQUEST: i32 = 9707;
pub const MPI_T_BIND_MPI_WIN: i32 = 9708;
pub const MPI_T_BIND_MPI_MESSAGE: i32 = 9709;
pub const MPI_T_BIND_MPI_INFO: i32 = 9710;
pub const MPI_T_SCOPE_INVALID: i32 = 0;
pub const MPI_T_SCOPE_CONSTANT: i32 = 60438;
pub const MPI_T_SCOPE_READONLY: i32 = 60439;
pub const MPI_T_SCOPE_LOCAL: i32 = 60440;
pub const MPI_T_SCOPE_GROUP: i32 = 60441;
pub const MPI_T_SCOPE_GROUP_EQ: i32 = 60442;
pub const MPI_T_SCOPE_ALL: i32 = 60443;
pub const MPI_T_SCOPE_ALL_EQ: i32 = 60444;
pub const MPI_T_PVAR_CLASS_INVALID: i32 = 0;
pub const MPI_T_PVAR_CLASS_STATE: i32 = 240;
pub const MPI_T_PVAR_CLASS_LEVEL: i32 = 241;
pub const MPI_T_PVAR_CLASS_SIZE: i32 = 242;
pub const MPI_T_PVAR_CLASS_PERCENTAGE: i32 = 243;
pub const MPI_T_PVAR_CLASS_HIGHWATERMARK: i32 = 244;
pub const MPI_T_PVAR_CLASS_LOWWATERMARK: i32 = 245;
pub const MPI_T_PVAR_CLASS_COUNTER: i32 = 246;
pub const MPI_T_PVAR_CLASS_AGGREGATE: i32 = 247;
pub const MPI_T_PVAR_CLASS_TIMER: i32 = 248;
pub const MPI_T_PVAR_CLASS_GENERIC: i32 = 249;

// ---- Handle encoding

/// The kind of a handle, bits 31..30.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleKind {
    /// 0: the `*_NULL` handles (and garbage).
    Invalid = 0,
    /// 1: predefined objects.
    Builtin = 1,
    /// 2: preallocated table entries (the pair datatypes; our own objects).
    Direct = 2,
    /// 3: MPICH's block-allocated objects; free for our own use.
    Indirect = 3,
}

pub const HANDLE_KIND_SHIFT: u32 = 30;
pub const HANDLE_KIND_MASK: u32 = 0xc000_0000;
pub const OBJECT_TYPE_SHIFT: u32 = 26;
pub const OBJECT_TYPE_MASK: u32 = 0x3c00_0000;
/// Bits left for the index once kind and object type are set.
pub const HANDLE_INDEX_MASK: u32 = 0x03ff_ffff;
/// Builtin keyvals name the object they attach to in bits 25..22.
pub const KEYVAL_OBJECT_SHIFT: u32 = 22;
pub const KEYVAL_OBJECT_MASK: u32 = 0x03c0_0000;
/// Builtin datatypes: size in bytes in bits 15..8.
pub const DATATYPE_SIZE_SHIFT: u32 = 8;
pub const DATATYPE_SIZE_MASK: u32 = 0x0000_ff00;

/// Object types, bits 29..26 (MPICH's `MPII_Object_kind`; session = 0xe read from
/// `MPI_SESSION_NULL`).
pub mod object_type {
    pub const COMM: u32 = 0x1;
    pub const GROUP: u32 = 0x2;
    pub const DATATYPE: u32 = 0x3;
    pub const FILE: u32 = 0x4;
    pub const ERRHANDLER: u32 = 0x5;
    pub const OP: u32 = 0x6;
    pub const INFO: u32 = 0x7;
    pub const WIN: u32 = 0x8;
    pub const KEYVAL: u32 = 0x9;
    pub const ATTR: u32 = 0xa;
    /// Requests and messages share it: `MPI_MESSAGE_NULL == MPI_REQUEST_NULL`.
    pub const REQUEST: u32 = 0xb;
    /// MPICH's generalized-request classes (MPIX_Grequest_class_create).
    pub const GREQ_CLASS: u32 = 0xd;
    pub const SESSION: u32 = 0xe;
}

pub const fn handle_kind(h: i32) -> HandleKind {
    match (h as u32 & HANDLE_KIND_MASK) >> HANDLE_KIND_SHIFT {
        0 => HandleKind::Invalid,
        1 => HandleKind::Builtin,
        2 => HandleKind::Direct,
        _ => HandleKind::Indirect,
    }
}

/// Object type of a handle, bits 29..26 (see [`object_type`]).
pub const fn handle_object_type(h: i32) -> u32 {
    (h as u32 & OBJECT_TYPE_MASK) >> OBJECT_TYPE_SHIFT
}

/// Index part, bits 25..0.
pub const fn handle_index(h: i32) -> u32 {
    h as u32 & HANDLE_INDEX_MASK
}

/// Composes a handle the way MPICH does; `index` must fit in 26 bits.
pub const fn make_handle(kind: HandleKind, object_type: u32, index: u32) -> i32 {
    assert!(object_type <= 0xf && index <= HANDLE_INDEX_MASK);
    (((kind as u32) << HANDLE_KIND_SHIFT) | (object_type << OBJECT_TYPE_SHIFT) | index) as i32
}

pub const fn is_builtin(h: i32) -> bool {
    matches!(handle_kind(h), HandleKind::Builtin)
}

/// Whether `h` has the shape of a datatype handle (any kind but invalid).
pub const fn is_datatype_handle(h: i32) -> bool {
    !matches!(handle_kind(h), HandleKind::Invalid) && handle_object_type(h) == object_type::DATATYPE
}

/// Size in bytes of a builtin datatype, read from bits 15..8; `None` for anything that is not a
/// builtin datatype (including the pair types, which are direct handles). `MPI_LB`/`MPI_UB`
/// give `Some(0)`.
pub const fn builtin_datatype_size(h: i32) -> Option<usize> {
    if is_builtin(h) && handle_object_type(h) == object_type::DATATYPE {
        Some(((h as u32 & DATATYPE_SIZE_MASK) >> DATATYPE_SIZE_SHIFT) as usize)
    } else {
        None
    }
}

/// The five MINLOC/MAXLOC pair types that MPICH makes direct handles, in handle order, with
/// the C type of their value part (layout `struct { T value; int index; }`).
pub const PAIR_TYPES: [(i32, &str); 5] = [
    (MPI_FLOAT_INT, "float"),
    (MPI_DOUBLE_INT, "double"),
    (MPI_LONG_INT, "long"),
    (MPI_SHORT_INT, "short"),
    (MPI_LONG_DOUBLE_INT, "long double"),
];

pub const fn is_pair_type(h: i32) -> bool {
    h as u32 >= MPI_FLOAT_INT as u32 && h as u32 <= MPI_LONG_DOUBLE_INT as u32
}

/// The first direct datatype handle after MPICH's pair types: where user datatypes start.
pub const FIRST_USER_DATATYPE: i32 = make_handle(HandleKind::Direct, object_type::DATATYPE, 5);

/// For a builtin keyval (`MPI_TAG_UB`, `MPI_WIN_BASE`, ...), the object type it attaches to
/// (bits 25..22: [`object_type::COMM`] or [`object_type::WIN`]).
pub const fn keyval_object_type(h: i32) -> u32 {
    (h as u32 & KEYVAL_OBJECT_MASK) >> KEYVAL_OBJECT_SHIFT
}

// ---- What the library must export besides the MPI_/PMPI_ functions

/// Data objects `libmpich.so.12` exports, with their sizes in bytes (readelf `--dyn-syms`,
/// type OBJECT, binding GLOBAL). Programs read the first seven through `mpi.h`'s `extern`
/// declarations; the `MPIR_` ones back them and MPICH's Fortran bindings.
pub const EXPORTED_OBJECTS: &[(&str, usize)] = &[
    ("MPI_UNWEIGHTED", 8),
    ("MPI_WEIGHTS_EMPTY", 8),
    ("MPI_F_STATUS_IGNORE", 8),
    ("MPI_F_STATUSES_IGNORE", 8),
    ("MPI_F08_STATUS_IGNORE", 8),
    ("MPI_F08_STATUSES_IGNORE", 8),
    ("MPI_T_PVAR_ALL_HANDLES", 8),
    ("MPIR_C_MPI_UNWEIGHTED", 8),
    ("MPIR_C_MPI_WEIGHTS_EMPTY", 8),
    ("MPIR_F08_MPI_STATUS_IGNORE_OBJ", 20),
    ("MPIR_F08_MPI_STATUSES_IGNORE_OBJ", 20),
    ("MPIR_F08_MPI_IN_PLACE", 4),
    ("MPIR_F08_MPI_BOTTOM", 4),
];

/// Non-`MPI_` functions a compiled program can reference: `MPI_DUP_FN`, `MPI_COMM_DUP_FN`,
/// `MPI_TYPE_DUP_FN` and `MPI_WIN_DUP_FN` all expand to this symbol.
pub const EXPORTED_FUNCTIONS: &[&str] = &["MPIR_Dup_fn"];

// ---- The table the ABI test checks

macro_rules! fact {
    ($name:ident) => {
        (stringify!($name), $name as i64)
    };
    ($label:expr, $value:expr) => {
        ($label, $value as i64)
    };
}

/// Every constant above, by its C name, plus the type sizes and `MPI_Status` layout, in the
/// `NAME VALUE` form `tests/c/abi/constants.c` prints. `tests/abi.rs` requires each entry to
/// equal that program's output against our `mpi.h`, and each integer constant it prints to be
/// listed here.
pub const ABI_FACTS: &[(&str, i64)] = &[
    fact!(MPI_VERSION),
    fact!(MPI_SUBVERSION),
    fact!(MPI_COMM_NULL),
    fact!(MPI_GROUP_NULL),
    fact!(MPI_DATATYPE_NULL),
    fact!(MPI_ERRHANDLER_NULL),
    fact!(MPI_OP_NULL),
    fact!(MPI_INFO_NULL),
    fact!(MPI_WIN_NULL),
    fact!(MPI_KEYVAL_INVALID),
    fact!(MPI_REQUEST_NULL),
    fact!(MPI_MESSAGE_NULL),
    fact!(MPI_SESSION_NULL),
    fact!(MPI_MESSAGE_NO_PROC),
    fact!(MPI_COMM_WORLD),
    fact!(MPI_COMM_SELF),
    fact!(MPI_GROUP_EMPTY),
    fact!(MPI_INFO_ENV),
    fact!(MPI_ERRORS_ARE_FATAL),
    fact!(MPI_ERRORS_RETURN),
    fact!(MPI_ERRORS_ABORT),
    fact!(MPI_CHAR),
    fact!(MPI_SIGNED_CHAR),
    fact!(MPI_UNSIGNED_CHAR),
    fact!(MPI_BYTE),
    fact!(MPI_WCHAR),
    fact!(MPI_SHORT),
    fact!(MPI_UNSIGNED_SHORT),
    fact!(MPI_INT),
    fact!(MPI_UNSIGNED),
    fact!(MPI_LONG),
    fact!(MPI_UNSIGNED_LONG),
    fact!(MPI_LONG_LONG_INT),
    fact!(MPI_LONG_LONG),
    fact!(MPI_UNSIGNED_LONG_LONG),
    fact!(MPI_FLOAT),
    fact!(MPI_DOUBLE),
    fact!(MPI_LONG_DOUBLE),
    fact!(MPI_PACKED),
    fact!(MPI_LB),
    fact!(MPI_UB),
    fact!(MPI_FLOAT_INT),
    fact!(MPI_DOUBLE_INT),
    fact!(MPI_LONG_INT),
    fact!(MPI_SHORT_INT),
    fact!(MPI_LONG_DOUBLE_INT),
    fact!(MPI_2INT),
    fact!(MPI_CHARACTER),
    fact!(MPI_LOGICAL),
    fact!(MPI_INTEGER),
    fact!(MPI_REAL),
    fact!(MPI_DOUBLE_PRECISION),
    fact!(MPI_COMPLEX),
    fact!(MPI_DOUBLE_COMPLEX),
    fact!(MPI_2INTEGER),
    fact!(MPI_2REAL),
    fact!(MPI_2DOUBLE_PRECISION),
    fact!(MPI_REAL4),
    fact!(MPI_REAL8),
    fact!(MPI_REAL16),
    fact!(MPI_COMPLEX8),
    fact!(MPI_COMPLEX16),
    fact!(MPI_COMPLEX32),
    fact!(MPI_INTEGER1),
    fact!(MPI_INTEGER2),
    fact!(MPI_INTEGER4),
    fact!(MPI_INTEGER8),
    fact!(MPI_INTEGER16),
    fact!(MPI_INT8_T),
    fact!(MPI_INT16_T),
    fact!(MPI_INT32_T),
    fact!(MPI_INT64_T),
    fact!(MPI_UINT8_T),
    fact!(MPI_UINT16_T),
    fact!(MPI_UINT32_T),
    fact!(MPI_UINT64_T),
    fact!(MPI_C_BOOL),
    fact!(MPI_C_FLOAT_COMPLEX),
    fact!(MPI_C_COMPLEX),
    fact!(MPI_C_DOUBLE_COMPLEX),
    fact!(MPI_C_LONG_DOUBLE_COMPLEX),
    fact!(MPI_AINT),
    fact!(MPI_OFFSET),
    fact!(MPI_COUNT),
    fact!(MPI_CXX_BOOL),
    fact!(MPI_CXX_FLOAT_COMPLEX),
    fact!(MPI_CXX_DOUBLE_COMPLEX),
    fact!(MPI_CXX_LONG_DOUBLE_COMPLEX),
    fact!(MPI_TYPECLASS_REAL),
    fact!(MPI_TYPECLASS_INTEGER),
    fact!(MPI_TYPECLASS_COMPLEX),
    fact!(MPI_MAX),
    fact!(MPI_MIN),
    fact!(MPI_SUM),
    fact!(MPI_PROD),
    fact!(MPI_LAND),
    fact!(MPI_BAND),
    fact!(MPI_LOR),
    fact!(MPI_BOR),
    fact!(MPI_LXOR),
    fact!(MPI_BXOR),
    fact!(MPI_MINLOC),
    fact!(MPI_MAXLOC),
    fact!(MPI_REPLACE),
    fact!(MPI_NO_OP),
    fact!(MPI_PROC_NULL),
    fact!(MPI_ANY_SOURCE),
    fact!(MPI_ROOT),
    fact!(MPI_ANY_TAG),
    fact!(MPI_UNDEFINED),
    fact!(MPI_F_STATUS_SIZE),
    fact!(MPI_F_SOURCE),
    fact!(MPI_F_TAG),
    fact!(MPI_F_ERROR),
    fact!(MPI_SUCCESS),
    fact!(MPI_ERR_BUFFER),
    fact!(MPI_ERR_COUNT),
    fact!(MPI_ERR_TYPE),
    fact!(MPI_ERR_TAG),
    fact!(MPI_ERR_COMM),
    fact!(MPI_ERR_RANK),
    fact!(MPI_ERR_ROOT),
    fact!(MPI_ERR_GROUP),
    fact!(MPI_ERR_OP),
    fact!(MPI_ERR_TOPOLOGY),
    fact!(MPI_ERR_DIMS),
    fact!(MPI_ERR_ARG),
    fact!(MPI_ERR_UNKNOWN),
    fact!(MPI_ERR_TRUNCATE),
    fact!(MPI_ERR_OTHER),
    fact!(MPI_ERR_INTERN),
    fact!(MPI_ERR_IN_STATUS),
    fact!(MPI_ERR_PENDING),
    fact!(MPI_ERR_REQUEST),
    fact!(MPI_ERR_ACCESS),
    fact!(MPI_ERR_AMODE),
    fact!(MPI_ERR_BAD_FILE),
    fact!(MPI_ERR_CONVERSION),
    fact!(MPI_ERR_DUP_DATAREP),
    fact!(MPI_ERR_FILE_EXISTS),
    fact!(MPI_ERR_FILE_IN_USE),
    fact!(MPI_ERR_FILE),
    fact!(MPI_ERR_INFO),
    fact!(MPI_ERR_INFO_KEY),
    fact!(MPI_ERR_INFO_VALUE),
    fact!(MPI_ERR_INFO_NOKEY),
    fact!(MPI_ERR_IO),
    fact!(MPI_ERR_NAME),
    fact!(MPI_ERR_NO_MEM),
    fact!(MPI_ERR_NOT_SAME),
    fact!(MPI_ERR_NO_SPACE),
    fact!(MPI_ERR_NO_SUCH_FILE),
    fact!(MPI_ERR_PORT),
    fact!(MPI_ERR_QUOTA),
    fact!(MPI_ERR_READ_ONLY),
    fact!(MPI_ERR_SERVICE),
    fact!(MPI_ERR_SPAWN),
    fact!(MPI_ERR_UNSUPPORTED_DATAREP),
    fact!(MPI_ERR_UNSUPPORTED_OPERATION),
    fact!(MPI_ERR_WIN),
    fact!(MPI_ERR_BASE),
    fact!(MPI_ERR_LOCKTYPE),
    fact!(MPI_ERR_KEYVAL),
    fact!(MPI_ERR_RMA_CONFLICT),
    fact!(MPI_ERR_RMA_SYNC),
    fact!(MPI_ERR_SIZE),
    fact!(MPI_ERR_DISP),
    fact!(MPI_ERR_ASSERT),
    fact!(MPI_ERR_RMA_RANGE),
    fact!(MPI_ERR_RMA_ATTACH),
    fact!(MPI_ERR_RMA_SHARED),
    fact!(MPI_ERR_RMA_FLAVOR),
    fact!(MPI_T_ERR_MEMORY),
    fact!(MPI_T_ERR_NOT_INITIALIZED),
    fact!(MPI_T_ERR_CANNOT_INIT),
    fact!(MPI_T_ERR_INVALID_INDEX),
    fact!(MPI_T_ERR_INVALID_ITEM),
    fact!(MPI_T_ERR_INVALID_HANDLE),
    fact!(MPI_T_ERR_OUT_OF_HANDLES),
    fact!(MPI_T_ERR_OUT_OF_SESSIONS),
    fact!(MPI_T_ERR_INVALID_SESSION),
    fact!(MPI_T_ERR_CVAR_SET_NOT_NOW),
    fact!(MPI_T_ERR_CVAR_SET_NEVER),
    fact!(MPI_T_ERR_PVAR_NO_STARTSTOP),
    fact!(MPI_T_ERR_PVAR_NO_WRITE),
    fact!(MPI_T_ERR_PVAR_NO_ATOMIC),
    fact!(MPI_T_ERR_INVALID_NAME),
    fact!(MPI_T_ERR_INVALID),
    fact!(MPI_ERR_SESSION),
    fact!(MPI_ERR_PROC_ABORTED),
    fact!(MPIX_ERR_PROC_FAILED),
    fact!(MPIX_ERR_PROC_FAILED_PENDING),
    fact!(MPIX_ERR_REVOKED),
    fact!(MPIX_ERR_EAGAIN),
    fact!(MPIX_ERR_NOREQ),
    fact!(MPI_ERR_VALUE_TOO_LARGE),
    fact!(MPI_T_ERR_NOT_SUPPORTED),
    fact!(MPI_ERR_LASTCODE),
    fact!(MPI_TAG_UB),
    fact!(MPI_HOST),
    fact!(MPI_IO),
    fact!(MPI_WTIME_IS_GLOBAL),
    fact!(MPI_UNIVERSE_SIZE),
    fact!(MPI_LASTUSEDCODE),
    fact!(MPI_APPNUM),
    fact!(MPI_WIN_BASE),
    fact!(MPI_WIN_SIZE),
    fact!(MPI_WIN_DISP_UNIT),
    fact!(MPI_WIN_CREATE_FLAVOR),
    fact!(MPI_WIN_MODEL),
    fact!(MPI_MAX_PROCESSOR_NAME),
    fact!(MPI_MAX_LIBRARY_VERSION_STRING),
    fact!(MPI_MAX_ERROR_STRING),
    fact!(MPI_MAX_PORT_NAME),
    fact!(MPI_MAX_OBJECT_NAME),
    fact!(MPI_MAX_INFO_KEY),
    fact!(MPI_MAX_INFO_VAL),
    fact!(MPI_MAX_DATAREP_STRING),
    fact!(MPI_MAX_STRINGTAG_LEN),
    fact!(MPI_MAX_PSET_NAME_LEN),
    fact!(MPI_BSEND_OVERHEAD),
    fact!(MPI_THREAD_SINGLE),
    fact!(MPI_THREAD_FUNNELED),
    fact!(MPI_THREAD_SERIALIZED),
    fact!(MPI_THREAD_MULTIPLE),
    fact!(MPI_IDENT),
    fact!(MPI_CONGRUENT),
    fact!(MPI_SIMILAR),
    fact!(MPI_UNEQUAL),
    fact!(MPI_GRAPH),
    fact!(MPI_CART),
    fact!(MPI_DIST_GRAPH),
    fact!(MPI_COMBINER_NAMED),
    fact!(MPI_COMBINER_DUP),
    fact!(MPI_COMBINER_CONTIGUOUS),
    fact!(MPI_COMBINER_VECTOR),
    fact!(MPI_COMBINER_HVECTOR_INTEGER),
    fact!(MPI_COMBINER_HVECTOR),
    fact!(MPI_COMBINER_INDEXED),
    fact!(MPI_COMBINER_HINDEXED_INTEGER),
    fact!(MPI_COMBINER_HINDEXED),
    fact!(MPI_COMBINER_INDEXED_BLOCK),
    fact!(MPI_COMBINER_STRUCT_INTEGER),
    fact!(MPI_COMBINER_STRUCT),
    fact!(MPI_COMBINER_SUBARRAY),
    fact!(MPI_COMBINER_DARRAY),
    fact!(MPI_COMBINER_F90_REAL),
    fact!(MPI_COMBINER_F90_COMPLEX),
    fact!(MPI_COMBINER_F90_INTEGER),
    fact!(MPI_COMBINER_RESIZED),
    fact!(MPI_COMBINER_HINDEXED_BLOCK),
    fact!(MPI_ORDER_C),
    fact!(MPI_ORDER_FORTRAN),
    fact!(MPI_DISTRIBUTE_BLOCK),
    fact!(MPI_DISTRIBUTE_CYCLIC),
    fact!(MPI_DISTRIBUTE_NONE),
    fact!(MPI_DISTRIBUTE_DFLT_DARG),
    fact!(MPI_COMM_TYPE_SHARED),
    fact!(MPI_COMM_TYPE_HW_GUIDED),
    fact!(MPI_COMM_TYPE_HW_UNGUIDED),
    fact!(MPI_MODE_NOCHECK),
    fact!(MPI_MODE_NOSTORE),
    fact!(MPI_MODE_NOPUT),
    fact!(MPI_MODE_NOPRECEDE),
    fact!(MPI_MODE_NOSUCCEED),
    fact!(MPI_LOCK_EXCLUSIVE),
    fact!(MPI_LOCK_SHARED),
    fact!(MPI_WIN_FLAVOR_CREATE),
    fact!(MPI_WIN_FLAVOR_ALLOCATE),
    fact!(MPI_WIN_FLAVOR_DYNAMIC),
    fact!(MPI_WIN_FLAVOR_SHARED),
    fact!(MPI_WIN_SEPARATE),
    fact!(MPI_WIN_UNIFIED),
    fact!(MPI_MODE_CREATE),
    fact!(MPI_MODE_RDONLY),
    fact!(MPI_MODE_WRONLY),
    fact!(MPI_MODE_RDWR),
    fact!(MPI_MODE_DELETE_ON_CLOSE),
    fact!(MPI_MODE_UNIQUE_OPEN),
    fact!(MPI_MODE_EXCL),
    fact!(MPI_MODE_APPEND),
    fact!(MPI_MODE_SEQUENTIAL),
    fact!(MPI_SEEK_SET),
    fact!(MPI_SEEK_CUR),
    fact!(MPI_SEEK_END),
    fact!(MPI_DISPLACEMENT_CURRENT),
    fact!(MPI_T_VERBOSITY_INVALID),
    fact!(MPI_T_VERBOSITY_USER_BASIC),
    fact!(MPI_T_VERBOSITY_USER_DETAIL),
    fact!(MPI_T_VERBOSITY_USER_ALL),
    fact!(MPI_T_VERBOSITY_TUNER_BASIC),
    fact!(MPI_T_VERBOSITY_TUNER_DETAIL),
    fact!(MPI_T_VERBOSITY_TUNER_ALL),
    fact!(MPI_T_VERBOSITY_MPIDEV_BASIC),
    fact!(MPI_T_VERBOSITY_MPIDEV_DETAIL),
    fact!(MPI_T_VERBOSITY_MPIDEV_ALL),
    fact!(MPI_T_BIND_INVALID),
    fact!(MPI_T_BIND_NO_OBJECT),
    fact!(MPI_T_BIND_MPI_COMM),
    fact!(MPI_T_BIND_MPI_DATATYPE),
    fact!(MPI_T_BIND_MPI_ERRHANDLER),
    fact!(MPI_T_BIND_MPI_FILE),
    fact!(MPI_T_BIND_MPI_GROUP),
    fact!(MPI_T_BIND_MPI_OP),
    fact!(MPI_T_BIND_MPI_REQUEST),
    fact!(MPI_T_BIND_MPI_WIN),
    fact!(MPI_T_BIND_MPI_MESSAGE),
    fact!(MPI_T_BIND_MPI_INFO),
    fact!(MPI_T_SCOPE_INVALID),
    fact!(MPI_T_SCOPE_CONSTANT),
    fact!(MPI_T_SCOPE_READONLY),
    fact!(MPI_T_SCOPE_LOCAL),
    fact!(MPI_T_SCOPE_GROUP),
    fact!(MPI_T_SCOPE_GROUP_EQ),
    fact!(MPI_T_SCOPE_ALL),
    fact!(MPI_T_SCOPE_ALL_EQ),
    fact!(MPI_T_PVAR_CLASS_INVALID),
    fact!(MPI_T_PVAR_CLASS_STATE),
    fact!(MPI_T_PVAR_CLASS_LEVEL),
    fact!(MPI_T_PVAR_CLASS_SIZE),
    fact!(MPI_T_PVAR_CLASS_PERCENTAGE),
    fact!(MPI_T_PVAR_CLASS_HIGHWATERMARK),
    fact!(MPI_T_PVAR_CLASS_LOWWATERMARK),
    fact!(MPI_T_PVAR_CLASS_COUNTER),
    fact!(MPI_T_PVAR_CLASS_AGGREGATE),
    fact!(MPI_T_PVAR_CLASS_TIMER),
    fact!(MPI_T_PVAR_CLASS_GENERIC),
    // sentinel addresses
    fact!(MPI_FILE_NULL),
    fact!(MPI_BOTTOM),
    fact!(MPI_IN_PLACE),
    fact!(MPI_STATUS_IGNORE),
    fact!(MPI_STATUSES_IGNORE),
    fact!(MPI_ERRCODES_IGNORE),
    fact!(MPI_ARGV_NULL),
    fact!(MPI_ARGVS_NULL),
    fact!(MPI_T_ENUM_NULL),
    fact!(MPI_T_CVAR_HANDLE_NULL),
    fact!(MPI_T_PVAR_HANDLE_NULL),
    fact!(MPI_T_PVAR_SESSION_NULL),
    // types
    fact!("sizeof(MPI_Aint)", size_of::<MPI_Aint>()),
    fact!("sizeof(MPI_Offset)", size_of::<MPI_Offset>()),
    fact!("sizeof(MPI_Count)", size_of::<MPI_Count>()),
    fact!("sizeof(MPI_Fint)", size_of::<MPI_Fint>()),
    fact!("sizeof(MPI_Comm)", size_of::<MPI_Comm>()),
    fact!("sizeof(MPI_Group)", size_of::<MPI_Group>()),
    fact!("sizeof(MPI_Datatype)", size_of::<MPI_Datatype>()),
    fact!("sizeof(MPI_Op)", size_of::<MPI_Op>()),
    fact!("sizeof(MPI_Errhandler)", size_of::<MPI_Errhandler>()),
    fact!("sizeof(MPI_Info)", size_of::<MPI_Info>()),
    fact!("sizeof(MPI_Win)", size_of::<MPI_Win>()),
    fact!("sizeof(MPI_Request)", size_of::<MPI_Request>()),
    fact!("sizeof(MPI_Message)", size_of::<MPI_Message>()),
    // status layout
    fact!("sizeof(MPI_Status)", size_of::<MPI_Status>()),
    fact!("alignof(MPI_Status)", core::mem::align_of::<MPI_Status>()),
    fact!("offsetof(MPI_Status.count_lo)", offset_of!(MPI_Status, count_lo)),
    fact!("offsetof(MPI_Status.count_hi_and_cancelled)", offset_of!(MPI_Status, count_hi_and_cancelled)),
    fact!("offsetof(MPI_Status.MPI_SOURCE)", offset_of!(MPI_Status, MPI_SOURCE)),
    fact!("offsetof(MPI_Status.MPI_TAG)", offset_of!(MPI_Status, MPI_TAG)),
    fact!("offsetof(MPI_Status.MPI_ERROR)", offset_of!(MPI_Status, MPI_ERROR)),
    // exported objects: all pointers
    fact!("object(MPI_UNWEIGHTED)", 8),
    fact!("object(MPI_WEIGHTS_EMPTY)", 8),
    fact!("object(MPI_F_STATUS_IGNORE)", 8),
    fact!("object(MPI_F_STATUSES_IGNORE)", 8),
    fact!("object(MPI_F08_STATUS_IGNORE)", 8),
    fact!("object(MPI_F08_STATUSES_IGNORE)", 8),
    fact!("object(MPI_T_PVAR_ALL_HANDLES)", 8),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_datatype_sizes_decode() {
        assert_eq!(builtin_datatype_size(MPI_CHAR), Some(1));
        assert_eq!(builtin_datatype_size(MPI_INT), Some(4));
        assert_eq!(builtin_datatype_size(MPI_DOUBLE), Some(8));
        assert_eq!(builtin_datatype_size(MPI_LONG_DOUBLE), Some(16));
        assert_eq!(builtin_datatype_size(MPI_C_LONG_DOUBLE_COMPLEX), Some(32));
        assert_eq!(builtin_datatype_size(MPI_2INT), Some(8));
        assert_eq!(builtin_datatype_size(MPI_LB), Some(0));
        assert_eq!(builtin_datatype_size(MPI_FLOAT_INT), None);
        assert_eq!(builtin_datatype_size(MPI_DATATYPE_NULL), None);
        assert_eq!(builtin_datatype_size(MPI_COMM_WORLD), None);
    }

    #[test]
    fn handle_fields_decode() {
        assert_eq!(handle_kind(MPI_COMM_WORLD), HandleKind::Builtin);
        assert_eq!(handle_object_type(MPI_COMM_WORLD), object_type::COMM);
        assert_eq!(handle_kind(MPI_COMM_NULL), HandleKind::Invalid);
        assert_eq!(handle_object_type(MPI_COMM_NULL), object_type::COMM);
        assert_eq!(handle_kind(MPI_FLOAT_INT), HandleKind::Direct);
        assert!(is_datatype_handle(MPI_LONG_DOUBLE_INT) && is_pair_type(MPI_LONG_DOUBLE_INT));
        assert!(!is_pair_type(MPI_2INT) && !is_pair_type(FIRST_USER_DATATYPE));
        assert_eq!(FIRST_USER_DATATYPE, 0x8c00_0005_u32 as i32);
        assert_eq!(handle_object_type(MPI_SUM), object_type::OP);
        assert_eq!(handle_object_type(MPI_ERRORS_RETURN), object_type::ERRHANDLER);
        assert_eq!(handle_object_type(MPI_INFO_ENV), object_type::INFO);
        assert_eq!(handle_object_type(MPI_REQUEST_NULL), object_type::REQUEST);
        assert_eq!(handle_object_type(MPI_MESSAGE_NO_PROC), object_type::REQUEST);
        assert_eq!(handle_object_type(MPI_SESSION_NULL), object_type::SESSION);
        assert_eq!(handle_object_type(MPI_TAG_UB), object_type::KEYVAL);
        assert_eq!(keyval_object_type(MPI_APPNUM), object_type::COMM);
        assert_eq!(keyval_object_type(MPI_WIN_MODEL), object_type::WIN);
        assert_eq!(make_handle(HandleKind::Builtin, object_type::COMM, 1), MPI_COMM_SELF);
    }

    /// Every predefined datatype except MPI_INTEGER16 (which MPICH maps to MPI_DATATYPE_NULL)
    /// is a builtin datatype whose encoded size is plausible, or one of the pair types.
    #[test]
    fn every_predefined_datatype_is_well_formed() {
        for &(name, v) in ABI_FACTS {
            let v = v as i32;
            if name == "MPI_INTEGER16" || name == "MPI_DATATYPE_NULL" || !is_datatype_handle(v) {
                continue;
            }
            assert!(is_pair_type(v) || builtin_datatype_size(v).is_some_and(|s| s <= 32), "{name}");
        }
    }

    #[test]
    fn status_count_round_trips_and_keeps_cancelled() {
        let mut s = MPI_Status::default();
        s.set_cancelled(true);
        for n in [0_i64, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x1_0000_0000, 0x3fff_ffff_ffff] {
            s.set_byte_count(n);
            assert_eq!(s.byte_count(), n);
            assert!(s.cancelled());
        }
        s.set_cancelled(false);
        assert_eq!(s.byte_count(), 0x3fff_ffff_ffff);
        assert!(!s.cancelled());
    }

    #[test]
    fn fact_names_are_unique() {
        let mut names: Vec<&str> = ABI_FACTS.iter().map(|f| f.0).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
