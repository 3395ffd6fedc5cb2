//! Shared by the tests: the fixture run_binding.sh prepares (see bindings/rust/test.sh).
#![allow(dead_code)]
use std::path::{Path, PathBuf};

pub fn config_path() -> PathBuf {
    PathBuf::from(
        std::env::var("TRAINRT_TEST_CONFIG")
            .expect("TRAINRT_TEST_CONFIG is not set: run the tests through bindings/rust/test.sh"),
    )
}

/// (step, loss bits) of the C API itself for config_path().
pub fn expected() -> Vec<(i64, u64)> {
    let path = std::env::var("TRAINRT_TEST_EXPECTED").expect("TRAINRT_TEST_EXPECTED is not set");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let step = it.next().unwrap().parse().unwrap();
            let bits = u64::from_str_radix(it.next().unwrap(), 16).unwrap();
            (step, bits)
        })
        .collect()
}

/// A fresh scratch folder of this test's own.
pub fn tmp(name: &str) -> PathBuf {
    let base = std::env::var("TRAINRT_TEST_TMP")
        .map(PathBuf::from)
        .unwrap_or_else(|_| std::env::temp_dir());
    let dir = base.join(format!("rust-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn session() -> trainrt::Session {
    trainrt::Session::from_file(config_path()).unwrap()
}

/// grad_accum * batch_size * (seq_len + 1) deterministic byte tokens.
pub fn host_tokens(cfg: &trainrt::Config) -> Vec<i32> {
    let n = cfg.get_int("train.grad_accum").unwrap()
        * cfg.get_int("train.batch_size").unwrap()
        * (cfg.get_int("train.seq_len").unwrap() + 1);
    (0..n).map(|i| ((i * 37 + 11) % 256) as i32).collect()
}

/// GPT-2's byte alphabet: byte b stands for itself when printable, else U+0100 onward.
fn byte_char(b: u32) -> char {
    let keep = |k: u32| (0x21..=0x7E).contains(&k) || (0xA1..=0xAC).contains(&k) || k >= 0xAE;
    let c = if keep(b) {
        b
    } else {
        0x100 + (0..b).filter(|&k| !keep(k)).count() as u32
    };
    char::from_u32(c).unwrap()
}

/// The tiny byte-level BPE of tests/unit/capi/capi_test_util.h (tiny_tokenizer_json): bytes
/// are ids 0..255; "he" 256, "ll" 257, "hell" 258, "hello" 259; "<|eot|>" 300. Written as
/// `dir/tokenizer.json`, whose path is returned.
pub fn write_tiny_tokenizer(dir: &Path) -> PathBuf {
    let mut vocab = String::new();
    for b in 0..256u32 {
        let c = byte_char(b);
        let key = if c == '"' || c == '\\' {
            format!("\\{c}")
        } else {
            c.to_string()
        };
        vocab += &format!("\"{key}\": {b}, ");
    }
    vocab += r#""he": 256, "ll": 257, "hell": 258, "hello": 259"#;
    let json = format!(
        r#"{{"added_tokens": [{{"id": 300, "content": "<|eot|>", "special": true}}],
  "normalizer": null,
  "pre_tokenizer": {{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}},
  "decoder": {{"type": "ByteLevel"}},
  "model": {{"type": "BPE", "vocab": {{{vocab}}}, "merges": ["h e", "l l", "he ll", "hell o"]}}}}"#
    );
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json).unwrap();
    path
}
