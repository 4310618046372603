// SPDX-License-Identifier: Apache-2.0
//! Memory over many create/run/drop cycles, alone in its process (cargo runs each tests/ file as
//! its own program), so that no other test's allocations move the resident size it reads.
use linfer::Model;
use std::path::PathBuf;

fn path(dir: &str, name: &str) -> PathBuf {
    let source = std::env::var("LINFER_SOURCE_DIR").expect("LINFER_SOURCE_DIR is not set: run through scripts/test-bindings.sh");
    PathBuf::from(source).join(dir).join(name)
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// 10,000 session create/run/drop cycles (a model load/drop every 10th) leave the resident
/// memory flat: a leaked session or model per cycle would add hundreds of MB.
#[test]
fn ten_thousand_cycles_leave_memory_flat() {
    let bytes = std::fs::read(path("examples/models", "langid.int8.lfm")).unwrap();
    let ids: Vec<i32> = std::fs::read(path("examples/data", "langid-fr.txt")).unwrap().into_iter().take(32).map(i32::from).collect();
    let mut model = Model::from_bytes(&bytes).unwrap();
    let mut before = 0;
    let warmup = 1000;
    for cycle in 0..10000 + warmup {
        if cycle == warmup {
            before = rss_bytes();
        }
        if cycle % 10 == 0 {
            model = Model::from_bytes(&bytes).unwrap();
        }
        let mut s = model.session(0, 1).unwrap();
        assert_eq!(s.run(&ids).unwrap().cols(), 10);
    }
    drop(model);
    let after = rss_bytes();
    println!("RSS over 10,000 cycles: {} KiB -> {} KiB", before / 1024, after / 1024);
    assert!(after < before + (16 << 20), "RSS grew by {} KiB", (after - before) / 1024);
}

