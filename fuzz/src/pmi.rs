//! `pmi_line`: the PMI-1 line decoder the launcher's server and every rank's client share.

use billboard::bootstrap::pmi::wire::{format_line, parse_line, Command, MAX_LINE};

/// `parse_line` and `Command::parse` never panic on any line, and a decoded message formats to a
/// line that decodes to the same message (what a server relays reads back unchanged).
pub fn check(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let _ = Command::parse(&line);
    let Ok(m) = parse_line(&line) else { return };
    assert!(!m.cmd.is_empty());
    let _ = m.rc();
    for (key, value) in &m.fields {
        assert!(!key.is_empty() && !key.contains([' ', '\t', '\n']), "bad key {key:?}");
        assert!(!value.contains('\n'), "newline in value {value:?}");
    }
    // The formatted line gains a newline: the round trip holds below the length limit.
    if line.len() < MAX_LINE {
        let fields: Vec<(&str, &str)> = m.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let again = format_line(&m.cmd, &fields);
        assert_eq!(parse_line(&again).ok(), Some(m), "{line:?} -> {again:?} reads back differently");
    }
}
