//! The variables MPI_T offers and the categories that group them, numbered once per process.
//!
//! Control variables are the library's tunables and collective switches, taken from the one
//! registry that declares them (`billboard::tunables::layers`, which `bbrun --info` prints too)
//! plus this library's own (one-sided windows); each layer is a category. Performance variables
//! (`pvar.rs`) join the category their layer names.

use std::ffi::CString;
use std::sync::OnceLock;

use billboard::tunables::{self, Effect, Switch, Tunable};

use super::pvar::PVARS;

/// What a control variable reads and writes.
pub(super) enum Knob {
    /// A number (MPI_UNSIGNED_LONG).
    Tunable(&'static Tunable),
    /// An algorithm choice (MPI_INT with an enumeration: 0 = the table chooses, i + 1 = forced
    /// algorithm i).
    Switch(&'static Switch),
}

pub(super) struct Cvar {
    pub knob: Knob,
    pub name: CString,
    pub desc: CString,
}

pub(super) struct Category {
    pub name: CString,
    pub desc: CString,
    pub cvars: Vec<i32>,
    pub pvars: Vec<i32>,
}

pub(super) struct Registry {
    pub cvars: Vec<Cvar>,
    pub categories: Vec<Category>,
}

/// This library's own layer: one-sided communication.
pub(crate) static RMA: tunables::Layer = tunables::Layer {
    name: "rma",
    doc: "one-sided communication: where windows live, how origins reach them",
    tunables: &[
        &crate::win::SHM_WINDOWS,
        &crate::win::SINGLE_COPY,
        &crate::win::ASYNC_PROGRESS,
        &crate::win::ACC_BULK,
        &crate::win::CREATE_MAP,
        &crate::win::ALLOC_MEM_SHARED,
    ],
    switches: &[],
};

pub(super) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut cvars = Vec::new();
        let mut categories = Vec::new();
        for layer in tunables::layers().iter().chain([&RMA]) {
            let first = cvars.len() as i32;
            cvars.extend(layer.tunables.iter().map(|&t| Cvar {
                knob: Knob::Tunable(t),
                name: c_string(t.env),
                desc: c_string(&tunable_desc(t)),
            }));
            cvars.extend(layer.switches.iter().map(|&s| Cvar {
                knob: Knob::Switch(s),
                name: c_string(s.env),
                desc: c_string(&format!(
                    "{} (writable: 0 = the table chooses, i = the i-th of {}; takes effect at the next collective \
                     call; set it alike on every rank)",
                    s.doc,
                    s.algorithms.join(", ")
                )),
            }));
            let pvars = (0..PVARS.len() as i32).filter(|&i| PVARS[i as usize].category == layer.name).collect();
            categories.push(Category {
                name: c_string(layer.name),
                desc: c_string(layer.doc),
                cvars: (first..cvars.len() as i32).collect(),
                pvars,
            });
        }
        Registry { cvars, categories }
    })
}

/// The tunable's own line, its default, and whether and when a write takes effect.
fn tunable_desc(t: &Tunable) -> String {
    let effect = match t.effect {
        Effect::Setup => "read-only: read once at setup; set the environment variable before the program starts",
        Effect::EachUse => "writable: takes effect at its next use in this process",
        Effect::EachCollective => "writable: takes effect at the next collective call; set it alike on every rank",
    };
    format!("{} (default {}; {effect})", t.doc, t.default)
}

pub(super) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}
