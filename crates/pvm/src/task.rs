//! This process as a PVM task.

/// An enrolled task.
#[derive(Debug)]
pub struct Task {
    pub tid: i32,
}
