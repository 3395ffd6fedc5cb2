//! Shared by the tests: the fixture run_binding.sh prepares (see bindings/rust/test.sh).
#![allow(dead_code)]
use std::path::PathBuf;

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
