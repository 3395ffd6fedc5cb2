//! The binding reproduces the C API's own per-step losses bit for bit.
mod common;

#[test]
fn step_losses_match_c_reference_bit_for_bit() {
    let expected = common::expected();
    assert!(!expected.is_empty());
    let mut s = common::session();
    for &(step, bits) in &expected {
        let r = s.step().unwrap();
        assert_eq!(r.step, step);
        assert_eq!(
            r.loss.to_bits(),
            bits,
            "step {step}: {} vs {}",
            r.loss,
            f64::from_bits(bits)
        );
        assert!(r.tokens > 0 && r.tokens_total == r.tokens * step);
        assert!(r.lr >= 0.0 && r.grad_norm.is_finite() && r.ms >= 0.0);
    }
    let synced = s.sync().unwrap();
    assert_eq!(synced.step, expected.len() as i64);
}

#[test]
fn train_with_progress_reports_the_same_losses() {
    let expected = common::expected();
    let mut cfg = trainrt::Config::from_file(common::config_path()).unwrap();
    cfg.set("runtime.log_every", "1").unwrap();
    let mut s = trainrt::Session::new(&cfg).unwrap();
    let mut seen = Vec::new();
    let out = s
        .train_with(expected.len() as i64, |p| {
            if p.kind == trainrt::ProgressKind::Step {
                seen.push((p.step, p.loss.to_bits()));
            }
            true
        })
        .unwrap();
    assert_eq!(out, trainrt::TrainOutcome::Completed);
    assert_eq!(seen, expected);
    let m = s.metrics().unwrap();
    assert_eq!(m.step, expected.len() as i64);
    // Metrics v3 on the CPU: FLOPs per token known, no peak, so no MFU.
    assert!(m.model_flops_per_token > 0.0);
    assert_eq!((m.peak_flops, m.mfu), (0.0, 0.0));
    assert_eq!((m.rank, m.world_size), (0, 1), "metrics v4: alone is rank 0 of 1");
}
