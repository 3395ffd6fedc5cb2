//! Tokenizer: encode / decode / lookups, errors with the C status, one tokenizer shared by
//! several threads, and prepare_text into shards.
use std::path::{Path, PathBuf};
use trainrt::{PrepareOptions, Status, Tokenizer};
mod common;

fn tiny(name: &str) -> (PathBuf, Tokenizer) {
    let dir = common::tmp(name);
    let tok = Tokenizer::load(common::write_tiny_tokenizer(&dir)).unwrap();
    (dir, tok)
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn encodes_decodes_and_looks_up() {
    assert_send_sync::<Tokenizer>();
    let (_dir, tok) = tiny("tok");
    let ids = tok.encode("hello hello<|eot|>").unwrap();
    assert_eq!(ids, vec![259, 32, 259, 300]);
    assert_eq!(tok.decode(&ids).unwrap(), "hello hello<|eot|>");
    let odd = "a\0b 日"; // a NUL and a CJK character
    let odd_ids = tok.encode(odd).unwrap();
    assert_eq!(tok.decode_bytes(&odd_ids).unwrap(), odd.as_bytes());
    assert_eq!(tok.decode(&odd_ids).unwrap(), odd);
    assert!(tok.encode("").unwrap().is_empty());
    assert_eq!(tok.decode(&[]).unwrap(), "");
    // A long text: more ids than any first guess of the decode buffer.
    let long = "hello world ".repeat(500);
    assert_eq!(tok.decode(&tok.encode(&long).unwrap()).unwrap(), long);

    assert_eq!(tok.vocab_size(), 301);
    assert_eq!(tok.token_id("<|eot|>").unwrap(), Some(300));
    assert_eq!(tok.token_id("hell").unwrap(), Some(258));
    assert_eq!(tok.token_id("not a token").unwrap(), None);
    assert_eq!(
        tok.token_id("a\0b").unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn cut_utf8_is_an_error_or_lossy() {
    let (_dir, tok) = tiny("tok-cut");
    // 日 is three byte tokens; the first alone is not UTF-8.
    let ids = tok.encode("日").unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(tok.decode_bytes(&ids[..1]).unwrap(), vec![0xE6]);
    let e = tok.decode(&ids[..1]).unwrap_err();
    assert_eq!(e.status(), Status::Format, "{e}");
    assert_eq!(tok.decode_lossy(&ids[..1]).unwrap(), "\u{FFFD}");
}

#[test]
fn errors_carry_the_c_status_and_message() {
    let (dir, tok) = tiny("tok-err");
    let missing = dir.join("missing.json");
    let e = Tokenizer::load(&missing).unwrap_err();
    assert_eq!(e.status(), Status::Io, "{e}");
    assert_eq!(e.code(), -3);
    assert!(e.message().contains("missing.json"), "{e}");

    let e = tok.encode_bytes(b"ok\xFF").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert_eq!(e.code(), -1);
    assert!(e.message().contains("byte 2"), "{e}");

    let e = tok.decode_bytes(&[301]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(e.message().contains("301"), "{e}");
    // The tokenizer is still usable after a failed call.
    assert_eq!(tok.encode("hello").unwrap(), vec![259]);

    // A model folder holding a tokenizer.json loads too.
    assert_eq!(Tokenizer::load(&dir).unwrap().vocab_size(), 301);
}

#[test]
fn one_tokenizer_serves_many_threads_at_once() {
    let (_dir, tok) = tiny("tok-threads");
    let text = "hello world, hello <|eot|> again\n日本";
    let want = tok.encode(text).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..200 {
                        let ids = tok.encode(text).unwrap();
                        assert_eq!(ids, want);
                        assert_eq!(tok.decode(&ids).unwrap(), text);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    // Moved to (and dropped on) another thread.
    let ids = std::thread::spawn(move || tok.encode("hello").unwrap())
        .join()
        .unwrap();
    assert_eq!(ids, vec![259]);
}

#[test]
fn prepare_text_writes_shards() {
    let dir = common::tmp("prep-text");
    common::write_tiny_tokenizer(&dir);
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"eos_token": "<|eot|>"}"#,
    )
    .unwrap();
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    // 18 bytes each: val_fraction 0.5 cuts at b's first byte, so b is val, whole.
    std::fs::write(&a, "hello\nhello hello\n").unwrap();
    std::fs::write(&b, "hello\nworld hello\n").unwrap();
    let out = dir.join("shards");
    let options = PrepareOptions {
        val_fraction: 0.5,
        threads: 2,
        ..PrepareOptions::new(&dir)
    };
    let mut reports = Vec::new();
    let r = trainrt::prepare_text_with(&[&a, &b], &out, &options, |done, total| {
        reports.push((done, total));
        true
    })
    .unwrap();
    assert_eq!(r.documents, 2);
    assert_eq!(r.eos_id, 300);
    assert_eq!(r.vocab_size, 301);
    assert_eq!(r.token_bytes, 2);
    assert_eq!(r.bytes, 36);
    assert!(r.train_tokens > 0 && r.val_tokens > 0);
    assert!(out.join("train.bin").is_file() && out.join("val.bin").is_file());
    assert_eq!((r.train_shards, r.val_shards), (1, 1));
    assert_eq!(reports.last(), Some(&(36, 36)), "{reports:?}");

    // Numbered shards of at most 2 tokens; the single files of the first run are removed.
    let sharded = PrepareOptions {
        shard_tokens: 2,
        ..options.clone()
    };
    let s = trainrt::prepare_text(&[&a, &b], &out, &sharded).unwrap();
    assert_eq!(s.train_tokens, r.train_tokens);
    assert_eq!(i64::from(s.train_shards), (r.train_tokens + 1) / 2);
    assert!(out.join("train_000000.bin").is_file() && out.join("val_000000.bin").is_file());
    assert!(!out.join("train.bin").exists());

    // The tokenizer file itself, JSON lines, no progress closure.
    let jl = dir.join("docs.jsonl");
    std::fs::write(&jl, "{\"text\": \"hello\"}\n{\"text\": \"hello hello\"}\n").unwrap();
    let options = PrepareOptions {
        jsonl_field: Some("text".into()),
        ..PrepareOptions::new(dir.join("tokenizer.json"))
    };
    let r = trainrt::prepare_text(&[&jl], dir.join("jl"), &options).unwrap();
    assert_eq!((r.documents, r.train_tokens, r.val_tokens), (2, 6, 0));

    let e = trainrt::prepare_text(&[dir.join("none.txt")], dir.join("x"), &options).unwrap_err();
    assert_eq!(e.status(), Status::Io, "{e}");
    let none: [&Path; 0] = [];
    let e = trainrt::prepare_text(&none, dir.join("x"), &options).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
}

#[test]
fn panic_in_prepare_progress_is_reraised_after_c_returns() {
    let dir = common::tmp("prep-panic");
    common::write_tiny_tokenizer(&dir);
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"eos_token": "<|eot|>"}"#,
    )
    .unwrap();
    let a = dir.join("a.txt");
    std::fs::write(&a, "hello\n").unwrap();
    let options = PrepareOptions::new(&dir);
    let r = std::panic::catch_unwind(|| {
        let _ = trainrt::prepare_text_with(&[&a], dir.join("out"), &options, |_, _| -> bool {
            panic!("boom in progress")
        });
    });
    assert_eq!(
        r.unwrap_err().downcast_ref::<&str>(),
        Some(&"boom in progress")
    );
    // The panic stopped the run: no shard.
    assert!(!dir.join("out").join("train.bin").exists());
}

#[test]
fn prepare_progress_can_stop_the_run() {
    let dir = common::tmp("prep-stop");
    common::write_tiny_tokenizer(&dir);
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"eos_token": "<|eot|>"}"#,
    )
    .unwrap();
    let a = dir.join("a.txt");
    std::fs::write(&a, "hello\nhello hello\n").unwrap();
    let out = dir.join("out");
    let mut calls = 0;
    let e = trainrt::prepare_text_with(&[&a], &out, &PrepareOptions::new(&dir), |_, _| {
        calls += 1;
        false
    })
    .unwrap_err();
    assert_eq!(e.status(), Status::Cancelled, "{e}");
    assert_eq!(calls, 1);
    assert!(!out.join("train.bin").exists() && !out.join("val.bin").exists());
}
