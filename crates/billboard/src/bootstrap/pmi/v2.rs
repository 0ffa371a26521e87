//! The PMI-2 wire format (MPICH's `src/pmi/pmi2/simple`, served by Slurm's `srun --mpi=pmi2`
//! and by Hydra), which [`super::Pmi`] speaks where the launcher is Slurm's.
//!
//! After a PMI-1 line that asks for version 2 (`cmd=init pmi_version=2 pmi_subversion=0`,
//! answered by `cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0`), every message in
//! either direction is a 6-character decimal length padded with spaces (MPICH's client aligns it
//! left, Hydra's server right: either is read), then
//! that many bytes of `cmd=<name>;<key>=<value>;...;`, a `;` inside a value written as `;;`:
//!
//! | client sends | server replies |
//! |---|---|
//! | `cmd=fullinit;pmirank=R;threaded=FALSE;` | `cmd=fullinit-response;rank=R;size=N;appnum=A;...;rc=0;` |
//! | `cmd=job-getid;` | `cmd=job-getid-response;jobid=ID;rc=0;` |
//! | `cmd=kvs-put;key=K;value=V;` | `cmd=kvs-put-response;rc=0;` |
//! | `cmd=kvs-fence;` | `cmd=kvs-fence-response;rc=0;` once every rank has sent it |
//! | `cmd=kvs-get;jobid=ID;srcid=-1;key=K;` | `cmd=kvs-get-response;found=TRUE;value=V;rc=0;` |
//! | `cmd=info-getjobattr;key=K;` | `cmd=info-getjobattr-response;found=TRUE;value=V;rc=0;` |
//! | `cmd=abort;isworldabort=TRUE;msg=TEXT;` | (none: the job ends) |
//! | `cmd=finalize;` | `cmd=finalize-response;rc=0;` |
//!
//! Decoding takes bytes from another process, so it never panics on malformed input.

use super::wire::{clip, Message};
use crate::{Error, Result};

/// Width of the length that starts every message.
pub const LENGTH_DIGITS: usize = 6;

/// Longest message body either side accepts (the length field's own limit is 999,999).
pub const MAX_BODY: usize = 64 * 1024;

/// Frames `cmd` and its fields as one message.
pub fn encode(cmd: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = format!("cmd={cmd};");
    for (key, value) in fields {
        body.push_str(key);
        body.push('=');
        body.push_str(&value.replace(';', ";;"));
        body.push(';');
    }
    let mut framed = format!("{:<width$}", body.len(), width = LENGTH_DIGITS).into_bytes();
    framed.extend_from_slice(body.as_bytes());
    framed
}

/// Reads the length field of a message: the body's size.
pub fn body_length(field: &[u8]) -> Result<usize> {
    let text = std::str::from_utf8(field).unwrap_or("").trim_matches(' ');
    match text.parse::<usize>() {
        Ok(n) if field.len() == LENGTH_DIGITS && n <= MAX_BODY => Ok(n),
        _ => Err(Error::Bootstrap(format!(
            "malformed PMI-2 length field {:?} (6 digits, at most {MAX_BODY})",
            String::from_utf8_lossy(field)
        ))),
    }
}

/// Decodes a message body (`cmd=<name>;k=v;...;`) into a [`Message`].
pub fn parse(body: &str) -> Result<Message> {
    let bad = |why: &str| Error::Bootstrap(format!("malformed PMI-2 message {:?}: {why}", clip(body)));
    let mut fields = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=').ok_or_else(|| bad("a field without '='"))?;
        if key.is_empty() || key.contains(';') {
            return Err(bad("an empty or broken key"));
        }
        // The value ends at the first ';' that is not doubled.
        let mut value = String::new();
        let mut chars = after.char_indices().peekable();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            if c == ';' {
                if chars.peek().map(|&(_, n)| n) == Some(';') {
                    chars.next();
                    value.push(';');
                    continue;
                }
                end = Some(i);
                break;
            }
            value.push(c);
        }
        let end = end.ok_or_else(|| bad("a value without its closing ';'"))?;
        fields.push((key.to_owned(), value));
        rest = &after[end + 1..];
    }
    match fields.first() {
        Some((key, cmd)) if key == "cmd" && !cmd.is_empty() => {
            let cmd = cmd.clone();
            fields.remove(0);
            Ok(Message { cmd, fields })
        }
        _ => Err(bad("the first field must be cmd=<name>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_with_semicolons_in_values() {
        let framed = encode("kvs-put", &[("key", "k;1"), ("value", "a;;b;")]);
        let (length, body) = framed.split_at(LENGTH_DIGITS);
        assert_eq!(body_length(length).unwrap(), body.len());
        assert_eq!(std::str::from_utf8(length).unwrap(), format!("{:<6}", body.len()));
        let m = parse(std::str::from_utf8(body).unwrap()).unwrap();
        assert_eq!(m.cmd, "kvs-put");
        assert_eq!(m.fields, [("key".to_string(), "k;1".to_string()), ("value".into(), "a;;b;".into())]);
    }

    #[test]
    fn a_servers_reply_reads_as_it_is_sent() {
        let m = parse("cmd=fullinit-response;pmi-version=2;rank=1;size=2;appnum=0;debugged=FALSE;rc=0;").unwrap();
        assert_eq!(
            (m.cmd.as_str(), m.require_int::<usize>("size").unwrap(), m.rc().unwrap()),
            ("fullinit-response", 2, 0)
        );
        assert_eq!(parse("cmd=kvs-get-response;found=TRUE;value=;rc=0;").unwrap().get("value"), Some(""));
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for body in ["", "cmd", "cmd=x", "key=v;", "cmd=;", "cmd=x;=v;", "cmd=x;k=v", "cmd=x;k;", "cmd=é;k=\u{0};;"] {
            assert!(parse(body).is_err(), "{body:?}");
        }
        for field in [&b"12"[..], b"abcdef", b"999999", b"-1    ", b"4 2   ", b"      "] {
            assert!(body_length(field).is_err(), "{field:?}");
        }
        assert_eq!([body_length(b"42    ").unwrap(), body_length(b"   113").unwrap()], [42, 113]);
    }
}
