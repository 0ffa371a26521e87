//! The large-count twins (MPI 4.0's `_c` functions): `MPI_Send_c` is `MPI_Send` with its
//! count an `MPI_Count`, `MPI_Gatherv_c` takes `MPI_Count` counts and `MPI_Aint`
//! displacements. Each pair is written once, by [`counted!`], over one body whose count types
//! are aliases the macro binds per entry point; the body hands its counts to the family's
//! code as `i64` (`.into()`), so the int form and the `_c` form share every line of logic.

/// `counted!{ [PMPI_X; Count = c_int, Disp = c_int] [PMPI_X_c; Count = MPI_Count, Disp =
/// MPI_Aint] fn(args) -> ret { body } }`: one exported function per bracket, each with the
/// bracket's type aliases in scope for `args` and `body`, and `FUNCTION` (the `MPI_` name, for
/// error messages) beside them.
macro_rules! counted {
    ($( [$($variant:tt)*] )+ fn $args:tt -> $ret:ty $body:block) => {
        $( counted!(@one [$($variant)*] $args $ret, $body); )+
    };
    (@one [$name:ident; $($alias:ident = $aty:ty),*] ($($arg:ident: $ty:ty),* $(,)?) $ret:ty, $body:block) => {
        const _: () = {
            $( #[allow(dead_code)] type $alias = $aty; )*
            #[allow(dead_code)]
            const FUNCTION: &str = crate::counts::mpi_name(stringify!($name));
            // `count.into()` converts in the int twin and is the identity in the `_c` one.
            #[allow(clippy::useless_conversion)]
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret $body
        };
    };
}

/// `MPI_X` from `PMPI_X`.
pub(crate) const fn mpi_name(pmpi: &'static str) -> &'static str {
    match pmpi.as_bytes() {
        [b'P', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(s) => s,
            Err(_) => pmpi,
        },
        _ => pmpi,
    }
}
