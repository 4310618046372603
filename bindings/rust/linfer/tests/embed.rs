// SPDX-License-Identifier: Apache-2.0
//! Model::embed and Session::embed against linfer-embed on tests/embed/make_embedder.sh's models
//! (LINFER_EMBED_DIR, from scripts/test-bindings.sh): the same library, so the same floats.
use linfer::{Head, Model, Status};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(std::env::var("LINFER_EMBED_DIR").expect("LINFER_EMBED_DIR is not set: run the tests through scripts/test-bindings.sh"))
}
fn texts() -> Vec<String> {
    std::fs::read_to_string(dir().join("texts.txt")).unwrap().lines().map(String::from).collect()
}
/// linfer-embed's output: one line of %.9g values per text (exact f32 round trips).
fn native_embeddings(name: &str) -> Vec<Vec<f32>> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.embed.txt"))).unwrap();
    text.lines().map(|l| l.split(' ').map(|v| v.parse::<f32>().unwrap()).collect()).collect()
}

#[test]
fn embeddings_are_linfer_embeds() {
    let texts = texts();
    assert_eq!(texts.len(), 5);
    for name in ["mean.f32", "mean.int8", "cls.f32"] {
        let expected = native_embeddings(name);
        let model = Model::load(dir().join(format!("{name}.lfm"))).unwrap();
        let info = model.info();
        assert_eq!(info.head, Head::Pooled);
        assert!(model.tokenize(&texts[4]).unwrap().len() > info.max_seq_len as usize, "the long text is cut");
        let rows = model.embed(&texts).unwrap();
        assert_eq!(rows.len(), texts.len());
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.len(), info.dim as usize);
            assert_eq!(row, &expected[i], "{name} text {i}");
        }
        assert_eq!(model.embed(&["a small sentence to embed"]).unwrap()[0], expected[0]);
        assert!(model.embed::<&str>(&[]).unwrap().is_empty());
        // One session for many texts, in any order; a session shorter than n cuts to its length.
        let mut session = model.session(0, 1).unwrap();
        assert_eq!(session.max_seq_len(), info.max_seq_len as usize);
        for i in (0..texts.len()).rev() {
            assert_eq!(session.embed(&texts[i]).unwrap(), expected[i], "{name} session text {i}");
        }
        let mut short = model.session(8, 1).unwrap();
        let ids = model.tokenize(&texts[4]).unwrap();
        let mut cut = ids[..8].to_vec();
        cut[7] = *ids.last().unwrap();
        let by_ids = short.run(&cut).unwrap().data().to_vec();
        assert_eq!(short.embed(&texts[4]).unwrap(), by_ids);
    }
}

#[test]
fn refuses_what_cannot_embed() {
    let unpooled = Model::load(dir().join("unpooled.f32.lfm")).unwrap();
    let e = unpooled.embed(&["a text"]).unwrap_err();
    assert_eq!(e.status(), Status::Unsupported);
    assert!(e.message().contains("output is not a pooled vector"), "{}", e.message());
    assert_eq!(unpooled.session(0, 1).unwrap().embed("a text").unwrap_err().status(), Status::Unsupported);
    let no_tokenizer = Model::load(dir().join("notokenizer.f32.lfm")).unwrap();
    assert_eq!(no_tokenizer.info().head, Head::Pooled);
    let e = no_tokenizer.embed(&["a", "b"]).unwrap_err();
    assert_eq!(e.status(), Status::Unsupported);
    assert!(e.message().contains("carries no tokenizer"), "{}", e.message());
}
