//! Link settings of the C library: PVM's soname, and the variadic `pvm_packf`/`pvm_unpackf`,
//! which stable Rust cannot define, compiled from C.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpvm3.so.3");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/exports.map");
    println!("cargo:rerun-if-changed=exports.map");
    println!("cargo:rerun-if-changed=src/packf.c");
    cc::Build::new().file("src/packf.c").flag_if_supported("-Wall").compile("pvmpackf");
}
