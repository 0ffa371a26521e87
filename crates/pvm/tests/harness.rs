//! The test harness itself: a test that fails leaves nothing of its virtual machine running.
//! `finish` kills only the program it started when it runs past its limit; the agent and the
//! tasks it spawned live on unless the failing test's `Vm` kills them as it unwinds.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn a_program_past_its_limit_leaves_no_process_of_its_vm() {
    let needle;
    {
        let vm = Vm::new("harness");
        needle = vm.dir().to_string_lossy().into_owned();
        // A descendant detached from the program's pipes (as an agent or a spawned task is).
        let program =
            vm.command("/bin/sh").args(["-c", "sleep 60 </dev/null >/dev/null 2>&1 & exec sleep 60"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let timed_out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            finish(program, Duration::from_millis(1), "a program that never ends")
        }));
        assert!(timed_out.is_err(), "finish must fail a program past its limit");
        assert!(!processes_with(&needle).is_empty(), "the descendant outlives the killed program");
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(processes_with(&needle), Vec::<u32>::new(), "left running after the test's Vm went");
}
