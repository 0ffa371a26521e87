//! The ABI pin: Billboard's `mpi.h` and `abi.rs` against Debian's MPICH 4.0.2.
//!
//! * `constants_match_mpich`: `tests/c/abi/constants.c` prints every constant, handle, type size,
//!   `MPI_Status` offset and exported-object type of `<mpi.h>`; it is built against our header
//!   and against MPICH's, and the outputs must agree line for line (two deliberate exceptions,
//!   [`DELIBERATE`]).
//! * `abi_rs_matches_our_header`: every entry of `abi::ABI_FACTS` equals what that program
//!   prints against our header, and every integer constant it prints has an entry.
//! * `declared_functions_match_mpich`: gcc's `-aux-info` lists each function prototype after
//!   preprocessing; every function we declare must be declared by MPICH with the identical
//!   signature, and every function of MPICH's we leave out must fall under a stated reason.
//! * `exported_objects_match_libmpich`: `abi::EXPORTED_OBJECTS` against `readelf --dyn-syms`.
//! * `same_object_code_as_mpich`: `tests/c/abi/same_code.c` compiles to identical code and
//!   relocations against both headers, as C and as C++.
//! * `header_compiles_cleanly`: C99 `-pedantic` and C++11, warnings as errors.
//!
//! Nothing links against an MPI library; the MPICH checks skip, saying so, where MPICH's
//! header or library is not installed (`apt-get install libmpich-dev`). Set
//! `BILLBOARD_MPICH_INCLUDE` to use MPICH's header from elsewhere, `CC`/`CXX` for the compilers
//! (gcc is needed for `-aux-info`).

// The library's own copy of the facts, included by path so that this test depends neither on
// the crate's name nor on what lib.rs re-exports.
#[allow(dead_code)]
#[path = "../src/abi.rs"]
mod abi;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const MPICH_INCLUDE: &str = "/usr/include/x86_64-linux-gnu/mpich";
const MPICH_LIB: &str = "/usr/lib/x86_64-linux-gnu/libmpich.so.12";

/// Lines where our header differs from MPICH's on purpose: (name, ours, MPICH's, why). None
/// since the header declares MPI 4.0, as MPICH's does.
const DELIBERATE: &[(&str, &str, &str, &str)] = &[];

/// MPICH's exported `MPI_` and `MPIX_` functions this library does not export yet, each with the reason
/// (none now); `exports_match_libmpich` fails on any other difference, and on a name here that
/// is exported (so that the list only shrinks).
const PENDING_EXPORTS: &[(&str, &str)] = &[];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn our_include() -> PathBuf {
    manifest_dir().join("include")
}

fn abi_c_dir() -> PathBuf {
    manifest_dir().join("../../tests/c/abi")
}

fn scratch(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

fn cxx() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

/// MPICH's include directory, or None (after saying why) when it is not installed.
fn mpich_include(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("BILLBOARD_MPICH_INCLUDE").map(PathBuf::from).unwrap_or_else(|| MPICH_INCLUDE.into());
    if dir.join("mpi.h").is_file() {
        Some(dir)
    } else {
        eprintln!("SKIP {test}: MPICH's header {} not found (install libmpich-dev)", dir.join("mpi.h").display());
        None
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Builds constants.c against `include` and returns its lines as name -> rest of line, plus
/// the names in printed order.
fn constants(include: &Path, tag: &str, werror: bool) -> (BTreeMap<String, String>, Vec<String>) {
    let exe = scratch(&format!("abi-constants-{tag}"));
    let mut build = Command::new(cc());
    build.args(["-std=gnu11", "-Wall", "-Wextra"]);
    if werror {
        build.arg("-Werror");
    }
    build.arg("-I").arg(include).arg(abi_c_dir().join("constants.c")).arg("-o").arg(&exe);
    run(&mut build);
    let text = run(&mut Command::new(&exe));
    let mut map = BTreeMap::new();
    let mut order = Vec::new();
    for line in text.lines() {
        let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
        assert!(map.insert(name.to_string(), rest.to_string()).is_none(), "{tag}: {name} printed twice");
        order.push(name.to_string());
    }
    (map, order)
}

/// Renders a printed value for a failure message, with the hex form of handle-like integers.
fn show(rest: &str) -> String {
    let mut parts = rest.splitn(2, ' ');
    let value = parts.next().unwrap_or("");
    let tail = parts.next().map(|t| format!(" {t}")).unwrap_or_default();
    match value.parse::<i64>() {
        Ok(v) if !(-0x10000..=0x10000).contains(&v) => format!("{v} (0x{:08x}){tail}", v as u32),
        _ => rest.to_string(),
    }
}

#[test]
fn constants_match_mpich() {
    let Some(mpich) = mpich_include("constants_match_mpich") else { return };
    let (ours, order) = constants(&our_include(), "ours", true);
    let (theirs, _) = constants(&mpich, "mpich", false);
    let mut problems = Vec::new();
    for name in &order {
        let mine = &ours[name];
        match theirs.get(name) {
            None => problems.push(format!("{name}: printed against our header only")),
            Some(t) if t == mine => {}
            Some(t) => match DELIBERATE.iter().find(|d| d.0 == name) {
                Some(d) if mine.split(' ').next() == Some(d.1) && t.split(' ').next() == Some(d.2) => {}
                _ => problems.push(format!("{name}: ours {}, MPICH {}", show(mine), show(t))),
            },
        }
    }
    for name in theirs.keys().filter(|n| !ours.contains_key(*n)) {
        problems.push(format!("{name}: printed against MPICH's header only"));
    }
    assert!(problems.is_empty(), "{} ABI differences from MPICH:\n  {}", problems.len(), problems.join("\n  "));
    eprintln!(
        "constants_match_mpich: {} facts identical to MPICH's ({} deliberate differences)",
        order.len() - DELIBERATE.len(),
        DELIBERATE.len()
    );
}

#[test]
fn abi_rs_matches_our_header() {
    let (ours, order) = constants(&our_include(), "ours-abi-rs", true);
    let mut problems = Vec::new();
    let mut listed = std::collections::BTreeSet::new();
    for &(name, value) in abi::ABI_FACTS {
        listed.insert(name);
        match ours.get(name).and_then(|rest| rest.split(' ').next()) {
            None => problems.push(format!("{name}: in ABI_FACTS but not printed by constants.c")),
            Some(v) if v.parse::<i64>() == Ok(value) => {}
            Some(v) => problems.push(format!("{name}: abi.rs {value} (0x{:08x}), mpi.h {}", value as u32, show(v))),
        }
    }
    // Completeness: an integer constant of mpi.h that abi.rs lacks is a value the library
    // cannot name. The *_FN (and MPI_CONVERSION_FN_NULL*) callback constants are function
    // pointers, not abi.rs material; nor are QMPI's function numbers (MPI_SEND_T ...), which
    // only a tool passes to QMPI_Register_function.
    let constant = |n: &&String| n.starts_with("MPI_") && !n.ends_with("_FN") && !n.contains("_FN_NULL");
    let qmpi_number =
        |n: &&String| ["MPI_ATTR_DELETE_T", "MPI_SEND_T", "MPI_TOPO_TEST_T", "MPI_LAST_FUNC_T"].contains(&n.as_str());
    for name in order.iter().filter(constant).filter(|n| !qmpi_number(n)) {
        let is_int = ours[name].split(' ').next().is_some_and(|v| v.parse::<i64>().is_ok());
        if is_int && !listed.contains(name.as_str()) {
            problems.push(format!("{name}: printed by constants.c, missing from abi.rs ABI_FACTS"));
        }
    }
    assert!(problems.is_empty(), "abi.rs disagrees with mpi.h:\n  {}", problems.join("\n  "));
    eprintln!("abi_rs_matches_our_header: {} abi.rs facts checked", abi::ABI_FACTS.len());
}

/// Function name -> normalized prototype, from gcc's -aux-info for a unit including mpi.h.
/// Kept: MPI_*, PMPI_*, MPICH's extensions MPIX_* and PMPIX_*, and MPIR_Dup_fn (the target of
/// MPI_DUP_FN).
fn declared_functions(include: &Path, tag: &str) -> BTreeMap<String, String> {
    let aux = scratch(&format!("abi-aux-{tag}.txt"));
    let obj = scratch(&format!("abi-aux-{tag}.o"));
    let mut cmd = Command::new(cc());
    cmd.arg("-std=c99").arg("-I").arg(include).arg("-aux-info").arg(&aux);
    cmd.arg("-c").arg(abi_c_dir().join("include_only.c")).arg("-o").arg(&obj);
    run(&mut cmd);
    let text = std::fs::read_to_string(&aux).expect("-aux-info output (is CC gcc?)");
    let mut map = BTreeMap::new();
    for line in text.lines() {
        // "/* file:line:NC */ extern int MPI_Send (const void *, int, ...);"
        let decl = line.split_once("*/ ").map_or(line, |(_, d)| d).trim();
        let Some(paren) = decl.find(" (") else { continue };
        let name = decl[..paren].rsplit([' ', '*']).next().unwrap_or("");
        if name.starts_with("MPI_")
            || name.starts_with("PMPI_")
            || is_mpix(name)
            || name == "MPIR_Dup_fn"
            || QMPI_EXPORTED.contains(&name)
        {
            map.insert(name.to_string(), decl.to_string());
        }
    }
    map
}

/// QMPI's registration calls, the only QMPI_ functions libmpich.so.12 exports (Debian builds
/// MPICH without QMPI: each returns MPI_ERR_UNSUPPORTED_OPERATION; its header declares a
/// QMPI_ form of every MPI function too, exported by neither library, so not compared).
const QMPI_EXPORTED: &[&str] = &[
    "QMPI_Register_tool_name",
    "QMPI_Register_tool_storage",
    "QMPI_Register_function",
    "QMPI_Get_function",
    "QMPI_Get_tool_storage",
    "QMPI_Get_calling_address",
];

/// MPICH's extensions: `MPIX_` functions and their `PMPIX_` twins.
fn is_mpix(name: &str) -> bool {
    name.starts_with("MPIX_") || name.starts_with("PMPIX_")
}

/// Why a function MPICH declares is not in our header, or None if it should be.
fn omission_reason(name: &str) -> Option<&'static str> {
    let base = name.strip_prefix('P').unwrap_or(name).strip_prefix("MPI_")?;
    // MPI 4.0 additions in MPICH 4.0.2 (checked against Open MPI 4.1's MPI 3.1 list).
    const MPI4: &[&str] = &["Status_c2f08", "Status_f082c", "Status_f082f", "Status_f2f08"];
    const PERSISTENT_COLLECTIVES: &[&str] = &[
        "Allgather",
        "Allgatherv",
        "Allreduce",
        "Alltoall",
        "Alltoallv",
        "Alltoallw",
        "Barrier",
        "Bcast",
        "Exscan",
        "Gather",
        "Gatherv",
        "Reduce",
        "Reduce_scatter",
        "Reduce_scatter_block",
        "Scan",
        "Scatter",
        "Scatterv",
        "Neighbor_allgather",
        "Neighbor_allgatherv",
        "Neighbor_alltoall",
        "Neighbor_alltoallv",
        "Neighbor_alltoallw",
    ];
    if let Some(plain) = base.strip_suffix("_c") {
        // Large-count forms of functions we provide are declared; of others, not.
        omission_reason(&format!("MPI_{plain}"))
    } else if MPI4.contains(&base) || base.strip_suffix("_init").is_some_and(|b| PERSISTENT_COLLECTIVES.contains(&b)) {
        Some("MPI 4.0 function")
    } else {
        None
    }
}

#[test]
fn declared_functions_match_mpich() {
    let ours = declared_functions(&our_include(), "ours");
    let mut problems = Vec::new();
    // Every MPI_ function has its PMPI_ twin with the same parameters, and vice versa.
    for (name, decl) in &ours {
        let twin = match name.strip_prefix('P') {
            Some(mpi) if name.starts_with("PMPI_") || name.starts_with("PMPIX_") => mpi.to_string(),
            _ if name.starts_with("MPI_") || name.starts_with("MPIX_") => format!("P{name}"),
            _ => continue,
        };
        match ours.get(&twin) {
            Some(t) if t.replacen(&twin, name, 1) == *decl => {}
            Some(t) => problems.push(format!("{name} and {twin} differ:\n    {decl}\n    {t}")),
            None => problems.push(format!("{name} has no {twin}")),
        }
    }
    let Some(mpich) = mpich_include("declared_functions_match_mpich") else {
        assert!(problems.is_empty(), "{}", problems.join("\n  "));
        return;
    };
    let theirs = declared_functions(&mpich, "mpich");
    for (name, decl) in &ours {
        match theirs.get(name) {
            None if beyond_mpich(name) => {}
            None => problems.push(format!("{name}: declared by us, not by MPICH")),
            Some(t) if t == decl => {}
            Some(t) => problems.push(format!("{name}: signature differs\n    ours:  {decl}\n    MPICH: {t}")),
        }
    }
    let mut omitted: BTreeMap<&str, usize> = BTreeMap::new();
    for name in theirs.keys().filter(|n| !ours.contains_key(*n)) {
        match omission_reason(name) {
            Some(why) => *omitted.entry(why).or_default() += 1,
            None => problems.push(format!("{name}: declared by MPICH, missing from our mpi.h")),
        }
    }
    assert!(problems.is_empty(), "{} function declaration problems:\n  {}", problems.len(), problems.join("\n  "));
    eprintln!(
        "declared_functions_match_mpich: {} prototypes identical to MPICH's; left out of MPICH's {}: {omitted:?}",
        ours.len(),
        theirs.len()
    );
}

#[test]
fn exported_objects_match_libmpich() {
    if !Path::new(MPICH_LIB).is_file() {
        eprintln!("SKIP exported_objects_match_libmpich: {MPICH_LIB} not found (install libmpich12)");
        return;
    }
    let table = run(Command::new("readelf").args(["--dyn-syms", "-W", MPICH_LIB]));
    // "  Num:    Value          Size Type    Bind   Vis      Ndx Name"
    let mut symbols = BTreeMap::new();
    for line in table.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 8 && f[6] != "UND" {
            symbols.insert(f[7].to_string(), (f[2].parse::<usize>().unwrap_or(usize::MAX), f[3].to_string()));
        }
    }
    let mut problems = Vec::new();
    for &(name, size) in abi::EXPORTED_OBJECTS {
        match symbols.get(name) {
            Some((s, kind)) if *s == size && kind == "OBJECT" => {}
            other => problems.push(format!("{name}: abi.rs says OBJECT of {size} bytes, libmpich has {other:?}")),
        }
    }
    for &name in abi::EXPORTED_FUNCTIONS {
        if symbols.get(name).map(|s| s.1.as_str()) != Some("FUNC") {
            problems.push(format!("{name}: not a function exported by libmpich"));
        }
    }
    // And the reverse: a public data object of MPICH's that abi.rs does not know about.
    for (name, (_, kind)) in &symbols {
        let public = name.starts_with("MPI_") || name.starts_with("MPIR_C_") || name.starts_with("MPIR_F08_");
        if kind == "OBJECT" && public && !abi::EXPORTED_OBJECTS.iter().any(|o| o.0 == name) {
            problems.push(format!("{name}: object exported by libmpich, missing from abi.rs EXPORTED_OBJECTS"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n  "));
}

/// Disassembly with relocations of same_code.c built against `include`, as C or C++.
fn object_code(include: &Path, tag: &str, cxx_mode: bool) -> String {
    let obj = scratch(&format!("abi-same-code-{tag}.o"));
    let mut cmd = Command::new(if cxx_mode { cxx() } else { cc() });
    if cxx_mode {
        // MPICH's mpi.h pulls in its C++ class bindings unless told not to; ours has none.
        cmd.args(["-x", "c++", "-std=c++11", "-DMPICH_SKIP_MPICXX"]);
    } else {
        cmd.arg("-std=c99");
    }
    cmd.args(["-O2", "-I"]).arg(include).arg("-c").arg(abi_c_dir().join("same_code.c")).arg("-o").arg(&obj);
    run(&mut cmd);
    let dump = run(Command::new("objdump").args(["-d", "-r"]).arg(&obj));
    // The first lines name the object file; the rest is code and relocations.
    dump.lines().skip_while(|l| !l.starts_with("Disassembly")).collect::<Vec<_>>().join("\n")
}

#[test]
fn same_object_code_as_mpich() {
    let Some(mpich) = mpich_include("same_object_code_as_mpich") else { return };
    for (lang, cxx_mode) in [("C", false), ("C++", true)] {
        let ours = object_code(&our_include(), &format!("ours-{lang}"), cxx_mode);
        let theirs = object_code(&mpich, &format!("mpich-{lang}"), cxx_mode);
        if ours != theirs {
            let first = ours.lines().zip(theirs.lines()).find(|(a, b)| a != b);
            panic!("tests/c/abi/same_code.c compiles to different {lang} code; first difference: {first:?}");
        }
    }
}

#[test]
fn header_compiles_cleanly() {
    let src = abi_c_dir().join("include_only.c");
    let inc = our_include();
    run(Command::new(cc())
        .args(["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only", "-I"])
        .arg(&inc)
        .arg(&src));
    run(Command::new(cxx())
        .args(["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only", "-I"])
        .arg(&inc)
        .arg(&src));
}

/// The library cargo built beside this test (target/<profile>/libmpi.so).
fn our_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let lib = exe.parent()?.parent()?.join("libmpi.so");
    lib.exists().then_some(lib)
}

#[test]
fn every_declared_function_is_exported_with_its_weak_alias() {
    let Some(lib) = our_library() else {
        eprintln!("SKIP every_declared_function_is_exported_with_its_weak_alias: libmpi.so not built beside the test");
        return;
    };
    let table = run(Command::new("readelf").args(["--dyn-syms", "-W"]).arg(&lib));
    let mut symbols = BTreeMap::new();
    for line in table.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 8 && f[6] != "UND" && f[3] == "FUNC" {
            symbols.insert(f[7].to_string(), f[4].to_string());
        }
    }
    let mut problems = Vec::new();
    let declared = declared_functions(&our_include(), "ours-exports");
    for name in declared.keys().filter(|n| n.starts_with("MPI_") || n.starts_with("MPIX_")) {
        let pmpi = format!("P{name}");
        match (symbols.get(&pmpi).map(String::as_str), symbols.get(name.as_str()).map(String::as_str)) {
            (Some("GLOBAL"), Some("WEAK")) => {}
            found => problems.push(format!("{name}: (PMPI_, MPI_) bindings {found:?}, expected (GLOBAL, WEAK)")),
        }
    }
    assert!(
        problems.is_empty(),
        "{} declared functions not exported right:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The functions a shared library exports, by `nm -D --defined-only`: `MPI_` and `MPIX_` names
/// (their `PMPI_`/`PMPIX_` twins are checked above).
fn exported_mpi_functions(lib: &Path) -> std::collections::BTreeSet<String> {
    exported(lib).into_iter().filter(|n| n.starts_with("MPI_") || n.starts_with("MPIX_")).collect()
}

/// Every name a shared library exports (`nm -D --defined-only`).
fn exported(lib: &Path) -> std::collections::BTreeSet<String> {
    let table = run(Command::new("nm").args(["-D", "--defined-only"]).arg(lib));
    table
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .collect()
}

/// Functions ours declares and exports beyond MPICH 4.0's, and why (their PMPI twins too): a
/// program built against MPICH never names them, so they cannot change what it runs.
const BEYOND_MPICH: &[(&str, &str)] =
    &[("MPIX_Comm_iagree", "ULFM's nonblocking agreement, as MPICH 4.1 declares it; MPICH 4.0.2 has none")];

fn beyond_mpich(name: &str) -> bool {
    let name = name.strip_prefix('P').filter(|n| n.starts_with("MPI")).unwrap_or(name);
    BEYOND_MPICH.iter().any(|b| b.0 == name)
}

/// MPICH's exports beyond the MPI functions that ours leaves out, and why (checked against the
/// undefined symbols of every Debian binary and library linked with libmpich: `nm -D
/// --undefined-only`; none of these names is there but in MPICH's own libmpichfort and
/// libmpichcxx).
fn not_exported(name: &str) -> Option<&'static str> {
    if ["MPII_Comm_get_attr", "MPII_Comm_set_attr", "MPII_Type_get_attr", "MPII_Type_set_attr"].contains(&name)
        || ["MPII_Win_get_attr", "MPII_Win_set_attr", "MPII_Grequest_set_lang_f77"].contains(&name)
    {
        Some("called only by MPICH's own libmpichfort.so.12, which ours replaces (it converts attributes itself)")
    } else if ["MPII_Errhandler_set_cxx", "MPII_Op_set_cxx", "MPII_Keyval_set_proxy"].contains(&name) {
        Some("called by MPICH's libmpichcxx.so.12 (the MPI:: C++ bindings MPI 3.0 removed), which no Debian binary links")
    } else if name.starts_with("MPIR_Err_") {
        Some("MPICH internals that take its internal object pointers (MPIR_Comm *); ROMIO inside libmpich calls them")
    } else {
        None
    }
}

#[test]
fn exports_match_libmpich() {
    let Some(lib) = our_library() else {
        eprintln!("SKIP exports_match_libmpich: libmpi.so not built beside the test");
        return;
    };
    if !Path::new(MPICH_LIB).is_file() {
        eprintln!("SKIP exports_match_libmpich: {MPICH_LIB} not found (install libmpich12)");
        return;
    }
    let ours = exported_mpi_functions(&lib);
    let theirs = exported_mpi_functions(Path::new(MPICH_LIB));
    let mut problems = Vec::new();
    for name in theirs.difference(&ours) {
        if !PENDING_EXPORTS.iter().any(|p| p.0 == name) {
            problems.push(format!("{name}: exported by libmpich.so.12, not by ours"));
        }
    }
    for name in ours.difference(&theirs).filter(|n| !beyond_mpich(n)) {
        problems.push(format!("{name}: exported by ours, not by libmpich.so.12"));
    }
    for (name, _) in PENDING_EXPORTS.iter().filter(|p| ours.contains(p.0)) {
        problems.push(format!("{name}: exported now: take it off PENDING_EXPORTS"));
    }
    // Every other name too: MPICH's internals a program may reference (MPII_Version_*), its
    // objects, the PMPI_ twins.
    let (ours_all, theirs_all) = (exported(&lib), exported(Path::new(MPICH_LIB)));
    let mut left_out = 0;
    for name in theirs_all.difference(&ours_all).filter(|n| !theirs.contains(*n)) {
        match not_exported(name) {
            Some(_) => left_out += 1,
            None if PENDING_EXPORTS.iter().any(|p| name.strip_prefix('P') == Some(p.0)) => {}
            None => problems.push(format!("{name}: exported by libmpich.so.12, not by ours")),
        }
    }
    for name in ours_all
        .difference(&theirs_all)
        .filter(|n| !ours.contains(*n) && !beyond_mpich(n) && n.as_str() != "bb_request_hook")
    {
        problems.push(format!("{name}: exported by ours, not by libmpich.so.12"));
    }
    for name in ours_all.iter().filter(|n| not_exported(n).is_some()) {
        problems.push(format!("{name}: exported now: take it off not_exported"));
    }
    assert!(problems.is_empty(), "{} export differences:\n  {}", problems.len(), problems.join("\n  "));
    eprintln!("exports_match_libmpich: of libmpich's {} names, {left_out} left out on purpose", theirs_all.len());
    eprintln!(
        "exports_match_libmpich: {} of libmpich's {} MPI_ and MPIX_ functions exported; pending: {}",
        theirs.len() - PENDING_EXPORTS.len(),
        theirs.len(),
        PENDING_EXPORTS.len()
    );
}
