//! Session calls beyond step: host tokens, forward, eval, metrics, sampling, checkpoints.
use trainrt::{Config, Dtype, SampleOptions, Session, Status};
mod common;

#[test]
fn step_tokens_forward_eval_metrics() {
    let cfg = Config::from_file(common::config_path()).unwrap();
    let tokens = common::host_tokens(&cfg);
    let mut s = Session::new(&cfg).unwrap();
    let m0 = s.metrics().unwrap();
    assert_eq!(m0.step, 0);
    assert!(m0.last_loss.is_nan());

    let seq = cfg.get_int("train.seq_len").unwrap();
    let row = &tokens[..(seq + 1) as usize];
    let before = s.forward(row, 1, seq).unwrap();
    let (again, logits) = s.forward_logits(row, 1, seq).unwrap();
    assert_eq!(before.to_bits(), again.to_bits(), "forward does not update");
    assert_eq!(logits.len(), (seq * 256) as usize);
    assert!(logits.iter().all(|x| x.is_finite()));

    let r = s.step_tokens(&tokens).unwrap();
    assert_eq!(r.step, 1);
    assert!(r.loss.is_finite());
    let e = s.step_tokens(&tokens[1..]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(
        s.forward(row, 1, seq).unwrap() < before,
        "one step on the row lowers its loss"
    );
    assert!(s.forward(&row[1..], 1, seq).is_err());

    let val = s.eval().unwrap();
    assert!(val.is_finite() && val > 0.0);
    let m = s.metrics().unwrap();
    assert_eq!(m.step, 1);
    assert_eq!(m.last_loss.to_bits(), r.loss.to_bits());
    assert!(m.bytes_in_use > 0);
    assert!(s.config_dump().unwrap().contains("[model]"));
}

#[test]
fn step_masked_of_all_ones_is_step_tokens_and_counts_only_the_mask() {
    let cfg = Config::from_file(common::config_path()).unwrap();
    let tokens = common::host_tokens(&cfg);
    let seq = cfg.get_int("train.seq_len").unwrap() as usize;
    let rows = tokens.len() / (seq + 1);
    let mut a = Session::new(&cfg).unwrap();
    let mut b = Session::new(&cfg).unwrap();
    let ones = vec![1u8; rows * seq];
    let ra = a.step_tokens(&tokens).unwrap();
    let rb = b.step_masked(&tokens, Some(&ones), None).unwrap();
    assert_eq!(ra.loss.to_bits(), rb.loss.to_bits());
    assert_eq!(ra.grad_norm.to_bits(), rb.grad_norm.to_bits());
    let half: Vec<u8> = (0..rows * seq).map(|i| (i % 2) as u8).collect();
    let positions: Vec<i32> = (0..rows * seq).map(|i| (i % seq) as i32).collect();
    let rc = a.step_masked(&tokens, Some(&half), Some(&positions)).unwrap();
    assert!(rc.loss.is_finite());
    assert_eq!(rc.tokens, ra.tokens, "tokens processed, counted or not");
    let zeros = vec![0u8; rows * seq];
    let e = a.step_masked(&tokens, Some(&zeros), None).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    let e = a.step_masked(&tokens, Some(&ones), Some(&positions[1..])).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert_eq!(a.metrics().unwrap().step, 2, "a refused step changes nothing");
}

#[test]
fn whole_evals() {
    let mut s = common::session();
    let w = s.eval_whole().unwrap();
    assert!(w.tokens > 0);
    assert!((w.perplexity - w.loss.exp()).abs() <= 1e-9 * w.perplexity);
    let ids = [82, 79, 77, 69, 79];
    let t = s.eval_tokens(&ids).unwrap();
    assert_eq!((t.tokens, t.windows), (4, 1));
    // Text without a tokenizer: one id per byte, the same stream.
    let x = s.eval_text("ROMEO", None).unwrap();
    assert_eq!(x, t);
    let e = s.eval_tokens(&ids[..1]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    let e = s
        .eval_text("ab", Some(std::path::Path::new("t\0k")))
        .unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
}

#[test]
fn sample_is_deterministic() {
    let mut s = common::session();
    s.step().unwrap();
    let o = SampleOptions {
        temperature: 0.8,
        top_k: 20,
        seed: 5,
    };
    let a = s.sample(&[72, 101], 16, &o).unwrap();
    let b = s.sample(&[72, 101], 16, &o).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 16);
    assert!(a.iter().all(|&t| (0..256).contains(&t)));
    assert!(s.sample(&[], 4, &SampleOptions::default()).is_err());
}

#[test]
fn save_load_resumes_bit_exactly_and_exports() {
    let dir = common::tmp("ckpt");
    let ckpt = dir.join("ckpt");
    let mut a = common::session();
    a.step().unwrap();
    a.step().unwrap();
    let written = a.save(Some(&ckpt)).unwrap();
    assert_eq!(written.file_name(), ckpt.file_name());
    assert_eq!(
        a.save(Some(&ckpt)).unwrap_err().status(),
        Status::Io,
        "dir must not exist"
    );

    let mut b = common::session();
    b.load(&ckpt).unwrap();
    let (ra, rb) = (a.step().unwrap(), b.step().unwrap());
    assert_eq!(ra.step, 3);
    assert_eq!(ra.loss.to_bits(), rb.loss.to_bits());
    assert_eq!(
        Config::from_checkpoint(&ckpt)
            .unwrap()
            .get_int("model.n_layer")
            .unwrap(),
        2
    );
    assert!(b.load(dir.join("missing")).is_err());

    a.export(dir.join("hf"), Dtype::F32).unwrap();
    assert!(dir.join("hf/model.safetensors").is_file());
    trainrt::checkpoint_export(&ckpt, dir.join("hf16"), Dtype::Bf16).unwrap();
    assert!(dir.join("hf16/config.json").is_file());
    assert_eq!(trainrt::checkpoint_latest(&dir).unwrap(), None);
}

#[test]
fn checkpoints_into_out_dir_and_latest() {
    let dir = common::tmp("outdir");
    let mut cfg = Config::from_file(common::config_path()).unwrap();
    cfg.set("train.out_dir", &format!("{:?}", dir.to_str().unwrap()))
        .unwrap();
    let mut s = Session::new(&cfg).unwrap();
    s.step().unwrap();
    let p = s.save(None).unwrap();
    assert!(p.ends_with("step_00000001"), "{}", p.display());
    let latest = trainrt::checkpoint_latest(&dir).unwrap().unwrap();
    assert!(latest.ends_with("step_00000001"));
}

#[test]
fn prepare_bytes_writes_shards() {
    let dir = common::tmp("prep");
    let text = dir.join("t.txt");
    std::fs::write(&text, "hello world, ".repeat(100)).unwrap();
    let (tr, va) = trainrt::prepare_bytes(&text, dir.join("data"), 0.1).unwrap();
    assert_eq!(tr + va, 1300);
    assert!(dir.join("data/train.bin").is_file());
    let e = trainrt::prepare_bytes(dir.join("none.txt"), dir.join("x"), 0.1).unwrap_err();
    assert_eq!(e.status(), Status::Io);
}

/// p with "\0x" appended: a path whose prefix the library would accept.
fn with_nul(p: &std::path::Path) -> std::path::PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push("\0x");
    s.into()
}

#[test]
fn nul_in_a_path_is_invalid_argument_and_nothing_is_written() {
    let dir = common::tmp("nul");
    let (ckpt, hf) = (dir.join("ckpt"), dir.join("hf"));
    let refused = |e: trainrt::Error, p: &std::path::Path| {
        assert_eq!(e.status(), Status::InvalidArgument, "{e}");
        let at = p.as_os_str().len();
        assert!(
            e.message()
                .contains(&format!("a path holds a NUL character at byte {at} ")),
            "{e}"
        );
    };
    let mut s = common::session();
    s.step().unwrap();
    refused(s.save(Some(&with_nul(&ckpt))).unwrap_err(), &ckpt);
    assert!(!ckpt.exists(), "a refused save wrote nothing");
    s.save(Some(&ckpt)).unwrap();
    refused(s.load(with_nul(&ckpt)).unwrap_err(), &ckpt);
    s.load(&ckpt).unwrap();
    refused(s.export(with_nul(&hf), Dtype::F32).unwrap_err(), &hf);
    refused(
        s.export_adapter(with_nul(&hf), Dtype::F32).unwrap_err(),
        &hf,
    );
    refused(
        trainrt::checkpoint_latest(with_nul(&dir)).unwrap_err(),
        &dir,
    );
    refused(
        trainrt::checkpoint_export(with_nul(&ckpt), &hf, Dtype::F32).unwrap_err(),
        &ckpt,
    );
    refused(
        trainrt::checkpoint_export(&ckpt, with_nul(&hf), Dtype::F32).unwrap_err(),
        &hf,
    );
    refused(
        trainrt::checkpoint_export_adapter(&ckpt, with_nul(&hf), Dtype::F32).unwrap_err(),
        &hf,
    );
    assert!(!hf.exists(), "a refused export wrote nothing");
    trainrt::checkpoint_export(&ckpt, &hf, Dtype::F32).unwrap();
    assert!(hf.join("model.safetensors").exists());
    let text = dir.join("a.txt");
    std::fs::write(&text, "hello\nhello hello\nworld\n").unwrap();
    let shards = dir.join("shards");
    refused(
        trainrt::prepare_bytes(with_nul(&text), &shards, 0.1).unwrap_err(),
        &text,
    );
    refused(
        trainrt::prepare_bytes(&text, with_nul(&shards), 0.1).unwrap_err(),
        &shards,
    );
    assert!(!shards.exists(), "a refused prepare wrote nothing");
}
