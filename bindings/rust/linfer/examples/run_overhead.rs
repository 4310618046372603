// SPDX-License-Identifier: Apache-2.0
//! The Rust binding's time of one run (bindings/bench/run_overhead.sh), as run_overhead.c does
//! for the C API, and the C API called through linfer-sys in the same process, alternately:
//! prints "rust min median" and "rust-sys min median" in microseconds.
//!     cargo run --release --example run_overhead MODEL.lfm T RUNS
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (t, runs): (usize, usize) = (args[2].parse().unwrap(), args[3].parse().unwrap());
    let ids: Vec<i32> = (0..t).map(|i| ((i * 37 + 11) % 256) as i32).collect();
    let model = linfer::Model::load(&args[1]).unwrap();
    let mut safe = model.session(t as u32, 1).unwrap();
    let mut raw_session = model.session(t as u32, 1).unwrap(); // run through the raw C API
    let raw_ptr = raw_session.as_ptr();
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let mut sink = 0f32;
    for r in 0..runs + runs / 4 {
        let t0 = Instant::now();
        sink += safe.run(&ids).unwrap().data()[0];
        let t1 = Instant::now();
        unsafe {
            assert_eq!(linfer::sys::linfer_session_run(raw_ptr, ids.as_ptr(), t), 0);
            let (mut p, mut rows, mut cols) = (std::ptr::null(), 0, 0);
            linfer::sys::linfer_session_output(raw_ptr, &mut p, &mut rows, &mut cols);
            sink += *p;
        }
        let t2 = Instant::now();
        if r >= runs / 4 {
            a.push((t1 - t0).as_secs_f64() * 1e6);
            b.push((t2 - t1).as_secs_f64() * 1e6);
        }
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    println!("rust {:.1} {:.1}", a[0], a[runs / 2]);
    println!("rust-sys {:.1} {:.1} ({})", b[0], b[runs / 2], sink.is_finite());
    drop(raw_session);
}
