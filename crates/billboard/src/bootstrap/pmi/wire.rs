//! The PMI-1 wire format, shared by the client ([`super::Pmi`]) and the `bbrun` server.
//!
//! PMI-1 ("simple PMI", MPICH's `src/pmi/simple`, served by Hydra's `pmiserv_pmi_v1.c`) is a
//! line protocol over a stream socket. Each message is one line of ASCII ending in `\n`:
//!
//! ```text
//! cmd=<name> <key>=<value> <key>=<value> ...\n
//! ```
//!
//! Tokens are separated by one or more spaces. Key order is not fixed: Hydra writes
//! `cmd=get_result rc=0 msg=success value=V`, other servers put `rc` last, so a decoder must look
//! keys up by name. Two liberties a reader must take (and this one does):
//! - a token without `=` continues the value before it (a value with spaces in it: `msg=no such
//!   key` reads as one value);
//! - `error_msg=` (the reason in `cmd=abort`) takes the rest of the line, `=` signs and all.
//!
//! The exchanges (client line, then the server's reply):
//!
//! | client sends | server replies |
//! |---|---|
//! | `cmd=initack pmiid=ID` (PMI_PORT mode only) | `cmd=initack`, then `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=D` |
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0` |
//! | `cmd=get_maxes` | `cmd=maxes kvsname_max=K keylen_max=L vallen_max=V rc=0` |
//! | `cmd=get_my_kvsname` | `cmd=my_kvsname kvsname=NAME rc=0` |
//! | `cmd=get_appnum` | `cmd=appnum appnum=A rc=0` |
//! | `cmd=get_universe_size` | `cmd=universe_size size=N rc=0` |
//! | `cmd=put kvsname=NAME key=K value=V` | `cmd=put_result rc=0 msg=success` |
//! | `cmd=get kvsname=NAME key=K` | `cmd=get_result rc=0 msg=success value=V` (rc=-1 when absent) |
//! | `cmd=barrier_in` | `cmd=barrier_out` once every rank has sent `barrier_in` |
//! | `cmd=abort exitcode=N error_msg=TEXT` | (none: the job ends) |
//! | `cmd=finalize` | `cmd=finalize_ack` |
//!
//! [`parse_line`] decodes any line into a [`Message`]; [`Command::parse`] types a client's line
//! for the server. Both take bytes from another process, so they never panic on malformed input.

use crate::{Error, Result};

/// Longest line either side accepts. Hydra's limit is 1024 bytes of key + value; this is far
/// above it so a real message is never cut, and low enough that a broken peer cannot make us
/// buffer without bound.
pub const MAX_LINE: usize = 64 * 1024;

/// Keys whose value is the rest of the line (it may hold spaces and `=`).
const REST_OF_LINE_KEYS: &[&str] = &["error_msg"];

/// One decoded line: its `cmd` and the other `key=value` fields in the order they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub cmd: String,
    pub fields: Vec<(String, String)>,
}

impl Message {
    /// The value of `key`, if the line has it (the first one, if repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or an error that names the key and the command.
    pub fn require(&self, key: &str) -> Result<&str> {
        self.get(key).ok_or_else(|| Error::Bootstrap(format!("PMI message cmd={} lacks the field {key}=", self.cmd)))
    }

    /// The value of `key` as an integer, or an error naming the key and the bad text.
    pub fn require_int<T: std::str::FromStr>(&self, key: &str) -> Result<T> {
        let text = self.require(key)?;
        text.trim()
            .parse()
            .map_err(|_| Error::Bootstrap(format!("PMI message cmd={}: {key}={text:?} is not a number", self.cmd)))
    }

    /// `rc`, where 0 (or no `rc` at all, as some servers send for `barrier_out`) means success.
    pub fn rc(&self) -> Result<i32> {
        match self.get("rc") {
            None => Ok(0),
            Some(_) => self.require_int("rc"),
        }
    }
}

/// Decodes one line (with or without its trailing newline) into a [`Message`].
///
/// Errors: an empty line, a line longer than [`MAX_LINE`], a first token that is not
/// `cmd=<name>` (or `mcmd=<name>`, PMI-1's multi-line spawn, reported with cmd `mcmd:<name>`),
/// a key that is empty, or a control character other than tab.
pub fn parse_line(line: &str) -> Result<Message> {
    let bad = |why: &str| Error::Bootstrap(format!("malformed PMI line {:?}: {why}", clip(line)));
    if line.len() > MAX_LINE {
        return Err(bad("longer than the PMI line limit"));
    }
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.chars().any(|c| c.is_control() && c != '\t') {
        return Err(bad("control character inside the line"));
    }
    let mut rest = line.trim_start_matches([' ', '\t']);
    let mut cmd: Option<String> = None;
    let mut fields: Vec<(String, String)> = Vec::new();
    while !rest.is_empty() {
        let end = rest.find([' ', '\t']).unwrap_or(rest.len());
        let token = &rest[..end];
        match token.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                if REST_OF_LINE_KEYS.contains(&key) {
                    let value = &rest[key.len() + 1..];
                    fields.push((key.to_owned(), value.trim_end().to_owned()));
                    break;
                }
                if cmd.is_none() {
                    cmd = Some(match key {
                        "cmd" => value.to_owned(),
                        "mcmd" => format!("mcmd:{value}"),
                        _ => return Err(bad("the first token must be cmd=<name>")),
                    });
                } else {
                    fields.push((key.to_owned(), value.to_owned()));
                }
            }
            Some(_) => return Err(bad("a token starts with '='")),
            // A bare word continues the previous value ("msg=key not found").
            None => match fields.last_mut() {
                Some((_, value)) => {
                    value.push(' ');
                    value.push_str(token);
                }
                None => return Err(bad("the first token must be cmd=<name>")),
            },
        }
        rest = rest[end..].trim_start_matches([' ', '\t']);
    }
    match cmd {
        Some(cmd) if !cmd.is_empty() => Ok(Message { cmd, fields }),
        Some(_) => Err(bad("empty command name")),
        None => Err(bad("empty line")),
    }
}

/// The start of a line for an error message (a hostile line could be megabytes long).
pub(super) fn clip(line: &str) -> &str {
    let mut end = line.len().min(120);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// A client's request, typed for the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `cmd=initack pmiid=ID`: first line in PMI_PORT mode, names which process connected.
    InitAck {
        pmiid: Option<String>,
    },
    Init {
        version: i32,
        subversion: i32,
    },
    GetMaxes,
    GetMyKvsname,
    GetAppnum,
    GetUniverseSize,
    Put {
        kvsname: String,
        key: String,
        value: String,
    },
    Get {
        kvsname: String,
        key: String,
    },
    BarrierIn,
    Abort {
        code: i32,
        msg: String,
    },
    Finalize,
    /// A well-formed line this server does not implement (e.g. `spawn`, `publish_name`).
    Unsupported {
        cmd: String,
    },
}

impl Command {
    /// Decodes a client's line. Unknown commands are [`Command::Unsupported`], not errors, so
    /// the server can answer them with `rc=-1` instead of dropping the client.
    pub fn parse(line: &str) -> Result<Command> {
        let m = parse_line(line)?;
        let text = |k: &str| m.require(k).map(str::to_owned);
        Ok(match m.cmd.as_str() {
            "initack" => Command::InitAck { pmiid: m.get("pmiid").map(str::to_owned) },
            "init" => Command::Init {
                version: m.require_int("pmi_version")?,
                subversion: m.get("pmi_subversion").map_or(Ok(0), |_| m.require_int("pmi_subversion"))?,
            },
            "get_maxes" => Command::GetMaxes,
            "get_my_kvsname" => Command::GetMyKvsname,
            "get_appnum" => Command::GetAppnum,
            "get_universe_size" => Command::GetUniverseSize,
            "put" => Command::Put { kvsname: text("kvsname")?, key: text("key")?, value: text("value")? },
            "get" => Command::Get { kvsname: text("kvsname")?, key: text("key")? },
            "barrier_in" => Command::BarrierIn,
            "abort" => Command::Abort {
                code: m.get("exitcode").map_or(Ok(1), |_| m.require_int("exitcode"))?,
                msg: m.get("error_msg").unwrap_or("").to_owned(),
            },
            "finalize" => Command::Finalize,
            other => Command::Unsupported { cmd: other.to_owned() },
        })
    }
}

/// Formats one message line: `cmd=<cmd> k=v ...\n`. Callers pass values without newlines;
/// a newline in a value is replaced by a space so one message stays one line.
pub fn format_line(cmd: &str, fields: &[(&str, &str)]) -> String {
    let mut line = format!("cmd={cmd}");
    for (key, value) in fields {
        line.push(' ');
        line.push_str(key);
        line.push('=');
        line.extend(value.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(m: &Message) -> Vec<(&str, &str)> {
        m.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn parses_keys_in_any_order() {
        let a = parse_line("cmd=get_result rc=0 msg=success value=abc\n").unwrap();
        let b = parse_line("cmd=get_result value=abc rc=0 msg=success").unwrap();
        for m in [&a, &b] {
            assert_eq!(m.cmd, "get_result");
            assert_eq!(m.get("value"), Some("abc"));
            assert_eq!(m.rc().unwrap(), 0);
        }
    }

    #[test]
    fn bare_words_continue_the_previous_value() {
        let m = parse_line("cmd=get_result rc=-1 msg=key foo not found").unwrap();
        assert_eq!(m.get("msg"), Some("key foo not found"));
        assert_eq!(m.rc().unwrap(), -1);
    }

    #[test]
    fn error_msg_takes_the_rest_of_the_line() {
        let m = parse_line("cmd=abort exitcode=3 error_msg=rank 1: x=y failed  \r\n").unwrap();
        assert_eq!(fields(&m), [("exitcode", "3"), ("error_msg", "rank 1: x=y failed")]);
        assert_eq!(
            Command::parse("cmd=abort exitcode=3 error_msg=a=b c").unwrap(),
            Command::Abort { code: 3, msg: "a=b c".into() }
        );
    }

    #[test]
    fn tolerates_extra_spaces_tabs_and_empty_values() {
        let m = parse_line("  cmd=put\tkvsname=k   key=a  value=  \n").unwrap();
        assert_eq!(fields(&m), [("kvsname", "k"), ("key", "a"), ("value", "")]);
        let m = parse_line("cmd=barrier_out").unwrap();
        assert!(m.fields.is_empty());
        assert_eq!(m.rc().unwrap(), 0);
        assert_eq!(parse_line("cmd=x a==b").unwrap().get("a"), Some("=b"));
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            "",
            "\n",
            "   ",
            "get_result rc=0",
            "rc=0 cmd=get_result",
            "cmd=",
            "cmd=x =y",
            "cmd=x a=b\x00c",
            "cmd=x a=b\nc=d",
            "value=x",
        ] {
            assert!(parse_line(bad).is_err(), "{bad:?} should be rejected");
        }
        let long = format!("cmd=put value={}", "x".repeat(MAX_LINE));
        assert!(parse_line(&long).is_err());
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let err = parse_line("bogus").unwrap_err().to_string();
        assert!(err.contains("bogus"), "{err}");
        let err = Command::parse("cmd=put kvsname=k key=a").unwrap_err().to_string();
        assert!(err.contains("value="), "{err}");
        let err = Command::parse("cmd=init pmi_version=one").unwrap_err().to_string();
        assert!(err.contains("pmi_version") && err.contains("one"), "{err}");
    }

    #[test]
    fn multi_line_commands_are_marked() {
        assert_eq!(parse_line("mcmd=spawn").unwrap().cmd, "mcmd:spawn");
        assert_eq!(Command::parse("mcmd=spawn").unwrap(), Command::Unsupported { cmd: "mcmd:spawn".into() });
    }

    #[test]
    fn types_every_client_command() {
        use Command::*;
        let cases = [
            ("cmd=initack pmiid=4", InitAck { pmiid: Some("4".into()) }),
            ("cmd=init pmi_version=1 pmi_subversion=1", Init { version: 1, subversion: 1 }),
            ("cmd=get_maxes", GetMaxes),
            ("cmd=get_my_kvsname", GetMyKvsname),
            ("cmd=get_appnum", GetAppnum),
            ("cmd=get_universe_size", GetUniverseSize),
            ("cmd=put kvsname=k key=a value=1", Put { kvsname: "k".into(), key: "a".into(), value: "1".into() }),
            ("cmd=get kvsname=k key=a", Get { kvsname: "k".into(), key: "a".into() }),
            ("cmd=barrier_in", BarrierIn),
            ("cmd=abort", Abort { code: 1, msg: String::new() }),
            ("cmd=finalize", Finalize),
            ("cmd=publish_name service=x port=y", Unsupported { cmd: "publish_name".into() }),
        ];
        for (line, want) in cases {
            assert_eq!(Command::parse(line).unwrap(), want, "{line}");
        }
    }

    #[test]
    fn format_and_parse_round_trip() {
        let line = format_line("put", &[("kvsname", "kvs_1"), ("key", "k"), ("value", "a\nb")]);
        assert_eq!(line, "cmd=put kvsname=kvs_1 key=k value=a b\n");
        let m = parse_line(&line).unwrap();
        assert_eq!(fields(&m), [("kvsname", "kvs_1"), ("key", "k"), ("value", "a b")]);
    }

    #[test]
    fn never_panics_on_arbitrary_bytes() {
        // A cheap deterministic fuzz: every short string over a hostile alphabet.
        let alphabet = ['c', 'm', 'd', '=', ' ', '\t', 'é', '\n', 'e', 'r', 'o', '_'];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 24) as usize;
            let s: String = (0..len).map(|i| alphabet[((seed >> (i % 60)) as usize + i) % alphabet.len()]).collect();
            let _ = parse_line(&s);
            let _ = Command::parse(&s);
            let _ = parse_line(&format!("cmd={s}"));
            let _ = parse_line(&format!("cmd=abort error_msg={s}"));
        }
    }
}
