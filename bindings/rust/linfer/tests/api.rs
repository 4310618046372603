// SPDX-License-Identifier: Apache-2.0
//! The safe API against the C API's behaviour and the references: the goldens, linfer-run's
//! outputs, the language-ID answers, bad files, bytes, ids and lengths, threads, and memory over
//! 10,000 create/run/drop cycles. Paths come from scripts/test-bindings.sh's environment.
use linfer::{AlignedBytes, Head, Model, Status};
use std::path::{Path, PathBuf};
use std::process::Command;

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the tests through scripts/test-bindings.sh"))
}
fn source() -> PathBuf {
    PathBuf::from(env("LINFER_SOURCE_DIR"))
}
fn model_path(name: &str) -> PathBuf {
    source().join("examples/models").join(name)
}
fn data(name: &str) -> PathBuf {
    source().join("examples/data").join(name)
}
fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env("LINFER_TEST_TMP"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}", std::process::id()))
}
fn text_ids(path: &Path) -> Vec<i32> {
    std::fs::read(path).unwrap().into_iter().map(i32::from).collect()
}
/// linfer-run as a command (an emulator may stand in front: the variable is split on spaces).
fn linfer_run() -> Command {
    let v = env("LINFER_RUN");
    let mut parts = v.split_whitespace();
    let mut c = Command::new(parts.next().unwrap());
    c.args(parts);
    c
}

/// A little-endian float32 C-order .npy file: (shape, values).
fn read_npy(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY", "{}", path.display());
    let (start, len) = if b[6] == 1 {
        (10, u16::from_le_bytes([b[8], b[9]]) as usize)
    } else {
        (12, u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize)
    };
    let header = std::str::from_utf8(&b[start..start + len]).unwrap();
    assert!(header.contains("'<f4'") && header.contains("'fortran_order': False"), "{header}");
    let dims = &header[header.find("'shape': (").unwrap() + 10..];
    let dims = &dims[..dims.find(')').unwrap()];
    let shape: Vec<usize> = dims.split(',').filter(|d| !d.trim().is_empty()).map(|d| d.trim().parse().unwrap()).collect();
    let values = b[start + len..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (shape, values)
}

fn scaled_error(got: &[f32], want: &[f32]) -> f64 {
    let (mut diff, mut scale) = (0f64, 1e-30f64);
    for (g, w) in got.iter().zip(want) {
        diff = diff.max((*g as f64 - *w as f64).abs());
        scale = scale.max((*w as f64).abs());
    }
    diff / scale
}

const SHIPPED: [(&str, &str); 4] = [
    ("byte-lm.lfm", "sample.txt"),
    ("langid.f32.lfm", "langid-de.txt"),
    ("langid.f16.lfm", "langid-fr.txt"),
    ("langid.int8.lfm", "langid-ru.txt"),
];

#[test]
fn version_and_info() {
    let v = linfer::library_version();
    assert_eq!(v.split('.').filter(|p| p.parse::<u32>().is_ok()).count(), 3, "{v}");
    for (name, text) in SHIPPED {
        let out = linfer_run().arg(model_path(name)).arg("--text").arg(data(text)).output().unwrap();
        assert!(out.status.success());
        let m = Model::load(model_path(name)).unwrap();
        let i = m.info();
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().next().unwrap(), i.to_string());
        assert_eq!(i.file_bytes, std::fs::metadata(model_path(name)).unwrap().len());
        assert!(i.resident_weight_bytes > 0 && i.resident_weight_bytes <= i.file_bytes);
        assert_eq!(i.dim, i.head_dim * i.num_heads);
        assert!(m.flops(200) > m.flops(100));
    }
    let labels = std::fs::read_to_string(model_path("langid.labels.txt")).unwrap();
    for dtype in ["f32", "f16", "int8"] {
        let i = Model::load(model_path(&format!("langid.{dtype}.lfm"))).unwrap().info();
        assert_eq!(i.weight_dtype, dtype);
        assert_eq!(i.head, Head::Classifier);
        assert_eq!(i.output_channels as usize, labels.split_whitespace().count());
        assert_eq!(i.vocab_size, 256);
    }
    assert_eq!(Model::load(model_path("byte-lm.lfm")).unwrap().info().head, Head::LmLogits);
}

/// Bit for bit what linfer-run --dump writes (its session: max_seq_len = the input's length).
#[test]
fn outputs_bit_identical_to_linfer_run() {
    for (name, text) in SHIPPED {
        let ids = text_ids(&data(text));
        let m = Model::load(model_path(name)).unwrap();
        for threads in [1u32, 2] {
            let dump = tmp(&format!("dump-{name}-{threads}.npy"));
            let out = linfer_run()
                .arg(model_path(name))
                .args(["--text".as_ref(), data(text).as_os_str(), "--dump".as_ref(), dump.as_os_str()])
                .args(["--threads", &threads.to_string()])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let (shape, want) = read_npy(&dump);
            let mut s = m.session(ids.len() as u32, threads).unwrap();
            let y = s.run(&ids).unwrap();
            assert_eq!((y.rows(), y.cols()), (shape[0], shape[1]));
            assert!(y.data().iter().map(|v| v.to_bits()).eq(want.iter().map(|v| v.to_bits())), "{name} threads {threads}");
        }
    }
}

/// tests/golden: the PyTorch reference outputs of the converted checkpoints, 1 and 2 threads.
#[test]
fn goldens() {
    let golden = source().join("tests/golden");
    let converted = PathBuf::from(env("LINFER_GOLDEN_DIR"));
    let mut cases = 0;
    for line in std::fs::read_to_string(golden.join("cases.txt")).unwrap().lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        let dir = golden.join(name);
        let m = Model::load(converted.join(format!("{name}.lfm"))).unwrap();
        let mut lengths: Vec<usize> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let n = e.unwrap().file_name().into_string().unwrap();
                n.strip_prefix("out_")?.strip_suffix(".npy")?.parse().ok()
            })
            .collect();
        lengths.sort();
        assert_eq!(lengths.len(), 4, "{name}");
        for threads in [1u32, 2] {
            let mut s = m.session(0, threads).unwrap();
            for t in &lengths {
                let ids: Vec<i32> = std::fs::read_to_string(dir.join(format!("ids_{t}.txt")))
                    .unwrap()
                    .split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect();
                assert_eq!(ids.len(), *t);
                let (shape, want) = read_npy(&dir.join(format!("out_{t}.npy")));
                let y = s.run(&ids).unwrap();
                assert_eq!((y.rows(), y.cols()), (shape[0], shape[1]), "{name}");
                let err = scaled_error(y.data(), &want);
                assert!(err <= 1e-4, "{name} T={t} threads {threads}: scaled error {err}");
            }
        }
        cases += 1;
    }
    assert_eq!(cases, 10);
}

#[test]
fn language_id_answers() {
    let labels: Vec<String> = std::fs::read_to_string(model_path("langid.labels.txt"))
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    for dtype in ["f32", "f16", "int8"] {
        let m = Model::load(model_path(&format!("langid.{dtype}.lfm"))).unwrap();
        let mut s = m.session(0, 1).unwrap();
        for lang in ["de", "fr", "ru"] {
            let y = s.run(&text_ids(&data(&format!("langid-{lang}.txt")))).unwrap();
            assert_eq!(y.rows(), 1);
            let best = (0..y.cols()).max_by(|&a, &b| y.data()[a].total_cmp(&y.data()[b])).unwrap();
            assert_eq!(labels[best], lang, "{dtype}");
        }
    }
}

#[test]
fn output_views() {
    let ids: Vec<i32> = text_ids(&data("sample.txt"))[..50].to_vec();
    let lm = Model::load(model_path("byte-lm.lfm")).unwrap();
    let mut s = lm.session(64, 1).unwrap();
    let want = s.run(&ids).unwrap().data().to_vec();
    let y = s.output().unwrap();
    assert_eq!((y.rows(), y.cols()), (50, 256));
    assert_eq!(y.data(), &want[..]);
    assert_eq!(y.row(3), &want[3 * 256..4 * 256]);
    let h = s.hidden_states().unwrap();
    assert_eq!((h.rows(), h.cols()), (50, lm.info().dim as usize));
    assert!(s.describe().contains("threads"), "{}", s.describe());
    assert!(s.arena_bytes() > 0);
}

fn fails<T: std::fmt::Debug>(r: linfer::Result<T>, status: Status, message: Option<&str>) -> linfer::Error {
    let e = r.expect_err("expected an error");
    assert_eq!(e.status(), status, "{e}");
    if let Some(m) = message {
        assert_eq!(e.message(), m);
        assert_eq!(e.to_string(), m);
    }
    e
}

/// The file is refused with the message linfer-run prints after the path.
fn bad_file(path: &Path, status: Status) -> linfer::Error {
    let e = fails(Model::load(path), status, None);
    let out = linfer_run().arg(path).arg("--text").arg(data("sample.txt")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), format!("linfer-run: {}: {}\n", path.display(), e));
    e
}

#[test]
fn bad_files_and_bytes() {
    let e = bad_file(&tmp("no-such-model.lfm"), Status::Io);
    assert!(e.message().contains("No such file"), "{e}");
    bad_file(&PathBuf::from(env("LINFER_TEST_TMP")), Status::Io); // a folder
    let empty = tmp("empty.lfm");
    std::fs::write(&empty, b"").unwrap();
    assert_eq!(bad_file(&empty, Status::InvalidModel).message(), "file is too small to be a linfer model (0 bytes)");
    let model = std::fs::read(model_path("langid.int8.lfm")).unwrap();
    let truncated = tmp("truncated.lfm");
    std::fs::write(&truncated, &model[..model.len() / 2]).unwrap();
    bad_file(&truncated, Status::InvalidModel);
    let garbage: Vec<u8> = (0..2048).map(|i| i as u8).collect();
    let bad = tmp("garbage.lfm");
    std::fs::write(&bad, &garbage).unwrap();
    bad_file(&bad, Status::InvalidModel);
    fails(Model::from_bytes(&garbage), Status::InvalidModel, None);
    for cut in (0..model.len()).step_by((model.len() / 97).max(1)) {
        fails(Model::from_bytes(&model[..cut]), Status::InvalidModel, None);
    }
    fails(
        Model::from_bytes(&model[..100]),
        Status::InvalidModel,
        Some("model file is corrupt: the FlatBuffers verifier rejected it (truncated or damaged)"),
    );
    fails(Model::load("a\0b"), Status::InvalidArgument, Some("the model path contains a NUL character"));
    // Unaligned bytes are refused for reading in place; a copy or an aligned buffer works.
    let mut shifted = vec![0u8; model.len() + 64];
    let skip = (64 - (shifted.as_ptr() as usize & 63)) % 64 + 1;
    shifted[skip..skip + model.len()].copy_from_slice(&model);
    let leaked: &'static [u8] = Box::leak(shifted.into_boxed_slice());
    fails(Model::from_static(&leaked[skip..skip + model.len()]), Status::InvalidArgument, None);
    let ids = text_ids(&data("langid-de.txt"));
    let want = Model::load(model_path("langid.int8.lfm")).unwrap().session(0, 1).unwrap().run(&ids).unwrap().data().to_vec();
    for m in [
        Model::from_bytes(&model).unwrap(),
        Model::in_place(AlignedBytes::new(&model)).unwrap(),
        Model::from_static(Box::leak(Box::new(AlignedBytes::new(&model))).as_slice()).unwrap(),
    ] {
        assert_eq!(m.info().file_bytes as usize, model.len());
        assert_eq!(m.session(0, 1).unwrap().run(&ids).unwrap().data(), &want[..]);
    }
}

#[test]
fn bad_inputs_and_options() {
    let m = Model::load(model_path("byte-lm.lfm")).unwrap();
    let mut s = m.session(64, 1).unwrap();
    let ids: Vec<i32> = text_ids(&data("sample.txt"))[..40].to_vec();
    let want = s.run(&ids).unwrap().data().to_vec();
    let inv = Status::InvalidArgument;
    fails(s.run(&[1, 256]), inv, Some("token id 256 at position 1 is outside the vocabulary [0, 256)"));
    fails(s.run(&[5, -1]), inv, Some("token id -1 at position 1 is outside the vocabulary [0, 256)"));
    fails(s.run(&[i32::MAX]), inv, Some("token id 2147483647 at position 0 is outside the vocabulary [0, 256)"));
    fails(s.run(&[0; 65]), inv, Some("input length 65 is outside [1, 64]"));
    fails(s.run(&vec![0; 100000]), inv, Some("input length 100000 is outside [1, 64]"));
    fails(s.run(&[]), inv, Some("input length 0 is outside [1, 64]"));
    // Refused before any computation: the last output is still there, and the session runs.
    assert_eq!(s.output().unwrap().data(), &want[..]);
    assert_eq!(s.run(&ids).unwrap().data(), &want[..]);
    let n = m.info().max_seq_len;
    fails(m.session(n + 1, 1), inv, Some(&format!("max_seq_len {} exceeds the model's n = {n}", n + 1)));
    fails(m.session(0, 1000), inv, Some("num_threads 1000 exceeds 256"));
    let fresh = m.session(0, 1).unwrap();
    fails(fresh.output(), inv, Some("the session has not run yet"));
    fails(fresh.hidden_states(), inv, Some("the session has not run yet"));
    assert_eq!(inv.code(), 1);
}

#[test]
fn sessions_outlive_their_model_value() {
    let m = Model::load(model_path("byte-lm.lfm")).unwrap();
    let mut s = m.session(0, 1).unwrap();
    let want = s.run(&[5, 6, 7]).unwrap().data().to_vec();
    drop(m); // the session keeps the model's memory
    assert_eq!(s.run(&[5, 6, 7]).unwrap().data(), &want[..]);
}

/// Two threads, one model, a session each: the same outputs as one thread alone.
#[test]
fn two_threads_share_a_model() {
    let m = Model::load(model_path("langid.int8.lfm")).unwrap();
    let inputs = [text_ids(&data("langid-de.txt")), text_ids(&data("langid-ru.txt"))];
    let mut s = m.session(0, 1).unwrap();
    let want: Vec<Vec<f32>> = inputs.iter().map(|ids| s.run(ids).unwrap().data().to_vec()).collect();
    assert_ne!(want[0], want[1]);
    std::thread::scope(|scope| {
        for which in 0..2 {
            let (m, inputs, want) = (&m, &inputs, &want);
            scope.spawn(move || {
                let mut s = m.session(0, 1).unwrap();
                for r in 0..200 {
                    let k = (r + which) % 2;
                    assert_eq!(s.run(&inputs[k]).unwrap().data(), &want[k][..], "thread {which} run {r}");
                }
            });
        }
    });
    // And a session moved into a thread, with a clone of the model.
    let (m2, ids, w) = (m.clone(), inputs[0].clone(), want[0].clone());
    let mut moved = m2.session(0, 1).unwrap();
    std::thread::spawn(move || assert_eq!(moved.run(&ids).unwrap().data(), &w[..])).join().unwrap();
}

#[test]
fn tokenizers() {
    let seeds = source().join("tests/fuzz/corpus/fuzz_lfm");
    let m = Model::load(seeds.join("tokenizer_wordpiece_f32.lfm")).unwrap();
    assert!(m.has_tokenizer());
    assert_eq!(m.tokenize("Unaffable, Caf\u{e9} [MASK]").unwrap(), [2, 5, 6, 7, 9, 11, 4, 3]);
    assert_eq!(m.detokenize(&[2, 5, 6, 7, 9, 11, 3]).unwrap(), "unaffable , cafe");
    let ids = m.tokenize("hello, cafe!").unwrap();
    assert_eq!(m.session(0, 1).unwrap().run(&ids).unwrap().cols(), m.info().output_channels as usize);
    let bpe = Model::load(seeds.join("tokenizer_byte_bpe_f32.lfm")).unwrap();
    assert_eq!(bpe.tokenize("hello world\u{fffd}").unwrap(), [259, 260, 111, 114, 108, 100, 239, 191, 189]);
    let plain = Model::load(model_path("byte-lm.lfm")).unwrap();
    assert!(!plain.has_tokenizer());
    fails(plain.tokenize("a"), Status::Unsupported, None);
}
