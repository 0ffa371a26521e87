//! The PVM host agent (pvmd's role).
fn main() {}
