//! The client against a scripted fake server over a socketpair (no launcher involved).

use super::*;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;

/// Replies of a well-behaved server to the opening handshake, keys deliberately reordered.
const HANDSHAKE: &[(&str, &str)] = &[
    ("cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=0 pmi_subversion=1 pmi_version=1"),
    ("cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024"),
    ("cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_7_0 rc=0"),
    ("cmd=get_appnum", "cmd=appnum rc=0 appnum=2"),
];

/// Runs a fake server that expects each request in `script` in order and answers with its
/// reply (no reply when it is empty), then closes the socket.
fn fake_server(script: Vec<(String, String)>) -> (File, JoinHandle<Vec<String>>) {
    let (client, server) = UnixStream::pair().unwrap();
    let handle = std::thread::spawn(move || {
        let mut reader = BufReader::new(server.try_clone().unwrap());
        let mut writer = server;
        let mut seen = Vec::new();
        for (want, reply) in script {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            assert_eq!(line.trim_end(), want);
            seen.push(line);
            if !reply.is_empty() {
                writer.write_all(format!("{reply}\n").as_bytes()).unwrap();
            }
        }
        seen
    });
    (File::from(OwnedFd::from(client)), handle)
}

fn script(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    HANDSHAKE.iter().chain(extra).map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn handshake_put_barrier_get_finalize() {
    let (conn, server) = fake_server(script(&[
        ("cmd=put kvsname=kvs_7_0 key=addr-1 value=shm:42", "cmd=put_result rc=0 msg=success"),
        ("cmd=barrier_in", "cmd=barrier_out"),
        ("cmd=get kvsname=kvs_7_0 key=addr-0", "cmd=get_result value=shm:41 rc=0 msg=success"),
        ("cmd=finalize", "cmd=finalize_ack rc=0"),
    ]));
    let mut pmi = Pmi::start(conn, Some((1, 2)), None).unwrap();
    assert_eq!((pmi.rank(), pmi.size(), pmi.appnum(), pmi.kvsname()), (1, 2, 2, "kvs_7_0"));
    pmi.put("addr-1", "shm:42").unwrap();
    pmi.barrier().unwrap();
    assert_eq!(pmi.get("addr-0").unwrap(), "shm:41");
    pmi.finalize().unwrap();
    pmi.finalize().unwrap(); // a second finalize is a no-op, not a hang
    assert_eq!(server.join().unwrap().len(), 8);
}

#[test]
fn port_mode_learns_rank_and_size_from_set_lines() {
    let mut steps = vec![(
        "cmd=initack pmiid=5".to_string(),
        "cmd=initack\ncmd=set size=8\ncmd=set rank=5\ncmd=set debug=0".to_string(),
    )];
    steps.extend(script(&[]));
    let (conn, server) = fake_server(steps);
    let pmi = Pmi::start(conn, None, Some("5")).unwrap();
    assert_eq!((pmi.rank(), pmi.size()), (5, 8));
    drop(pmi);
    server.join().unwrap();
}

#[test]
fn failed_get_names_the_key() {
    let (conn, server) =
        fake_server(script(&[("cmd=get kvsname=kvs_7_0 key=nobody", "cmd=get_result rc=-1 msg=key_nobody_not_found")]));
    let mut pmi = Pmi::start(conn, Some((0, 1)), None).unwrap();
    let err = pmi.get("nobody").unwrap_err().to_string();
    assert!(err.contains("\"nobody\"") && err.contains("rc=-1"), "{err}");
    drop(pmi);
    server.join().unwrap();
}

#[test]
fn server_closing_is_a_clear_error_not_a_hang() {
    // The server answers the handshake, reads the barrier request, and hangs up.
    let (conn, server) = fake_server(script(&[("cmd=barrier_in", "")]));
    let mut pmi = Pmi::start(conn, Some((0, 2)), None).unwrap();
    let err = pmi.barrier().unwrap_err().to_string();
    server.join().unwrap();
    assert!(err.contains("closed the connection") && err.contains("barrier_out"), "{err}");
    // Writing to the dead socket is an error too, not a SIGPIPE.
    assert!(pmi.put("k", "v").is_err());
}

#[test]
fn unexpected_reply_is_an_error() {
    let (conn, server) = fake_server(vec![("cmd=init pmi_version=1 pmi_subversion=1".into(), "cmd=maxes rc=0".into())]);
    let err = Pmi::start(conn, Some((0, 1)), None).err().unwrap().to_string();
    assert!(err.contains("response_to_init"), "{err}");
    server.join().unwrap();
}

#[test]
fn init_refused_by_the_server() {
    let (conn, server) = fake_server(vec![(
        "cmd=init pmi_version=1 pmi_subversion=1".into(),
        "cmd=response_to_init rc=-1 msg=version mismatch".into(),
    )]);
    let err = Pmi::start(conn, Some((0, 1)), None).err().unwrap().to_string();
    assert!(err.contains("init failed") && err.contains("version mismatch"), "{err}");
    server.join().unwrap();
}

#[test]
fn abort_sends_code_and_reason_last() {
    let (conn, server) = fake_server(script(&[("cmd=abort exitcode=3 error_msg=bad input: x=1", "")]));
    let mut pmi = Pmi::start(conn, Some((0, 1)), None).unwrap();
    pmi.abort(3, "bad input: x=1\n").unwrap();
    server.join().unwrap();
}

#[test]
fn refuses_keys_and_values_pmi_cannot_carry() {
    let (conn, server) = fake_server(script(&[]));
    let mut pmi = Pmi::start(conn, Some((0, 1)), None).unwrap();
    assert!(pmi.put("a b", "v").is_err());
    assert!(pmi.put("a=b", "v").is_err());
    assert!(pmi.put("", "v").is_err());
    assert!(pmi.put("k", "two words").is_err());
    assert!(pmi.put("k", &"x".repeat(1024)).is_err());
    assert!(pmi.put(&"k".repeat(64), "v").is_err());
    drop(pmi);
    server.join().unwrap();
}

#[test]
fn endpoint_from_environment() {
    let env = |pairs: &'static [(&str, &str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    assert_eq!(endpoint_from(env(&[])).unwrap(), None);
    assert_eq!(endpoint_from(env(&[("PMI_FD", "")])).unwrap(), None);
    assert_eq!(
        endpoint_from(env(&[("PMI_FD", "5"), ("PMI_RANK", "1"), ("PMI_SIZE", "4")])).unwrap(),
        Some(Endpoint::Fd { fd: 5, rank: 1, size: 4 })
    );
    assert_eq!(
        endpoint_from(env(&[("PMI_PORT", "node1:4000"), ("PMI_ID", "3")])).unwrap(),
        Some(Endpoint::Port { addr: "node1:4000".into(), pmiid: "3".into() })
    );
    let err = endpoint_from(env(&[("PMI_FD", "5"), ("PMI_SIZE", "4")])).unwrap_err().to_string();
    assert!(err.contains("PMI_RANK"), "{err}");
    let err = endpoint_from(env(&[("PMI_FD", "x"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")])).unwrap_err();
    assert!(err.to_string().contains("PMI_FD=\"x\""), "{err}");
    assert!(endpoint_from(env(&[("PMI_PORT", "4000"), ("PMI_ID", "3")])).is_err());
    assert!(endpoint_from(env(&[("PMI_PORT", "h:4000")])).is_err());
}

#[test]
fn rank_outside_size_is_refused() {
    let (conn, server) = fake_server(vec![]);
    assert!(Pmi::start(conn, Some((2, 2)), None).is_err());
    server.join().unwrap();
}

/// PMI-2 is chosen in a Slurm step that bbrun did not start (BB_PMI unset, as in tests).
#[test]
fn pmi2_is_spoken_in_a_slurm_step_bbrun_did_not_start() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    };
    assert!(use_pmi2(env(&[("SLURM_STEP_ID", "0"), ("PMI_FD", "3")])));
    assert!(!use_pmi2(env(&[("SLURM_STEP_ID", "0"), ("BB_JOBID", "1x2")])));
    assert!(!use_pmi2(env(&[("PMI_FD", "3")])));
}
