//! Parameters (list, read, write) and user metadata.
use trainrt::{Config, ParamRole, Status};
mod common;

#[test]
fn params_list_in_table_order_with_contiguous_offsets() {
    let cfg = Config::from_file(common::config_path()).unwrap();
    let mut s = trainrt::Session::new(&cfg).unwrap();
    let (count, numel) = s.param_count().unwrap();
    let params = s.params().unwrap();
    assert_eq!(params.len(), count);
    assert!(count > 2);
    let wte = &params[0];
    assert_eq!(wte.name, "wte.weight");
    assert_eq!(wte.role, ParamRole::TokenEmbedding);
    assert_eq!(wte.shape, vec![256, 32]);
    assert_eq!((wte.numel, wte.offset, wte.layer), (256 * 32, 0, None));
    assert!(wte.trainable);
    assert_eq!(params[1].role, ParamRole::PositionEmbedding);
    let mut next = 0;
    for p in &params {
        assert_eq!(p.offset, next, "{} starts where the previous ends", p.name);
        assert_eq!(p.numel, p.shape.iter().product::<usize>(), "{}", p.name);
        assert!(matches!(p.shape.len(), 1 | 2), "{}", p.name);
        assert!(p.layer.map_or(true, |l| l < 2), "{}", p.name);
        next += p.numel;
    }
    assert_eq!(next, numel, "offsets sum to the flat buffer's size");
    assert_eq!(numel as i64, cfg.model_info().unwrap().parameters);
    assert!(params.iter().any(|p| p.layer == Some(1)));
    assert!(params.iter().any(|p| p.role == ParamRole::Linear));
    assert_eq!(s.param_info(1).unwrap(), params[1]);
    let e = s.param_info(count).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert_eq!(
        ParamRole::from_code(ParamRole::LoraB.code()),
        ParamRole::LoraB
    );
    assert_eq!(ParamRole::from_code(99), ParamRole::Other(99));
}

#[test]
fn flat_buffer_is_the_named_tensors_back_to_back() {
    let mut s = common::session();
    s.step().unwrap();
    let flat = s.read_params(None).unwrap();
    let mut concat = Vec::with_capacity(flat.len());
    for p in s.params().unwrap() {
        let t = s.read_params(Some(&p.name)).unwrap();
        assert_eq!(t.len(), p.numel, "{}", p.name);
        assert_eq!(&flat[p.offset..p.offset + p.numel], &t[..], "{}", p.name);
        concat.extend_from_slice(&t);
    }
    assert_eq!(flat.len(), concat.len());
    assert!(flat
        .iter()
        .zip(&concat)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let mut again = vec![0f32; flat.len()];
    s.read_params_into(None, &mut again).unwrap();
    assert_eq!(flat, again);
}

#[test]
fn write_changes_eval_and_writing_back_restores_it_bitwise() {
    let mut s = common::session();
    s.step().unwrap();
    let before = s.eval().unwrap();
    let original = s.read_params(Some("wte.weight")).unwrap();
    let scaled: Vec<f32> = original.iter().map(|x| x * 3.0 + 0.01).collect();
    s.write_params(Some("wte.weight"), &scaled).unwrap();
    assert_eq!(s.read_params(Some("wte.weight")).unwrap(), scaled);
    let changed = s.eval().unwrap();
    assert_ne!(
        changed.to_bits(),
        before.to_bits(),
        "eval sees the written weights"
    );
    s.write_params(Some("wte.weight"), &original).unwrap();
    assert_eq!(s.eval().unwrap().to_bits(), before.to_bits());

    // The flat buffer round-trips too, and training goes on.
    let flat = s.read_params(None).unwrap();
    s.write_params(None, &flat).unwrap();
    assert_eq!(s.eval().unwrap().to_bits(), before.to_bits());
    assert!(s.step().unwrap().loss.is_finite());
}

#[test]
fn refused_reads_and_writes_leave_the_weights_alone() {
    let mut s = common::session();
    let before = s.read_params(None).unwrap();
    let wte = s.read_params(Some("wte.weight")).unwrap();

    let e = s.write_params(Some("wte.weight"), &wte[1..]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert_eq!(e.code(), -1);
    assert!(e.message().contains("wte.weight"), "{e}");
    let e = s.write_params(None, &[]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    let e = s.read_params_into(None, &mut [0f32; 3]).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(e.message().contains(&before.len().to_string()), "{e}");

    let mut poisoned = before.clone();
    *poisoned.last_mut().unwrap() = f32::NAN;
    let e = s.write_params(None, &poisoned).unwrap_err();
    assert_eq!(e.status(), Status::NonFinite, "{e}");
    assert_eq!(e.code(), -13);
    let mut poisoned = wte.clone();
    poisoned[5] = f32::INFINITY;
    let e = s.write_params(Some("wte.weight"), &poisoned).unwrap_err();
    assert_eq!(e.status(), Status::NonFinite, "{e}");

    let e = s.read_params(Some("wte.weigth")).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(e.message().contains("did you mean"), "{e}");
    assert!(e.message().contains("wte.weight"), "{e}");
    let e = s.write_params(Some("wte.weigth"), &wte).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(e.message().contains("did you mean"), "{e}");
    let e = s.read_params(Some("a\0b")).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");

    let after = s.read_params(None).unwrap();
    assert!(before
        .iter()
        .zip(&after)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn metadata_set_get_remove_keys_and_checkpoint_round_trip() {
    let mut s = common::session();
    assert!(s.metadata_keys().unwrap().is_empty());
    assert_eq!(s.metadata("client").unwrap(), None);
    s.set_metadata("run.name", "tiny ünïcødé").unwrap();
    s.set_metadata("client", "7").unwrap();
    s.set_metadata("Zeta-1", "").unwrap();
    let long = "x".repeat(5000);
    s.set_metadata("long_value", &long).unwrap();
    s.set_metadata("client", "8").unwrap();
    assert_eq!(s.metadata("client").unwrap().as_deref(), Some("8"));
    assert_eq!(s.metadata("Zeta-1").unwrap().as_deref(), Some(""));
    assert_eq!(s.metadata("long_value").unwrap(), Some(long.clone()));
    assert_eq!(
        s.metadata_keys().unwrap(),
        ["Zeta-1", "client", "long_value", "run.name"]
    );
    s.remove_metadata("long_value").unwrap();
    s.remove_metadata("never-set").unwrap();
    assert_eq!(s.metadata("long_value").unwrap(), None);
    assert_eq!(s.metadata_keys().unwrap(), ["Zeta-1", "client", "run.name"]);
    let e = s.set_metadata("a key", "v").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(!e.message().is_empty());

    s.step().unwrap();
    let ckpt = common::tmp("meta").join("ckpt");
    s.save(Some(&ckpt)).unwrap();
    let mut b = common::session();
    b.set_metadata("replaced", "by the load").unwrap();
    b.load(&ckpt).unwrap();
    assert_eq!(b.metadata_keys().unwrap(), ["Zeta-1", "client", "run.name"]);
    assert_eq!(
        b.metadata("run.name").unwrap().as_deref(),
        Some("tiny ünïcødé")
    );
    assert_eq!(b.metadata("replaced").unwrap(), None);
    assert_eq!(b.read_params(None).unwrap(), s.read_params(None).unwrap());
}
