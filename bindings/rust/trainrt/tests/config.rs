//! Config: typed get/set, dump, parsing, and errors carrying status + message.
use trainrt::{Config, Status};
mod common;

#[test]
fn set_and_typed_getters() {
    let mut c = Config::from_file(common::config_path()).unwrap();
    assert_eq!(c.get_int("model.n_layer").unwrap(), 2);
    c.set("optim.lr", "1e-3").unwrap();
    assert_eq!(c.get_double("optim.lr").unwrap(), 1e-3);
    c.set("train.batch_size", "2").unwrap();
    assert_eq!(c.get_int("train.batch_size").unwrap(), 2);
    c.set("train.out_dir", "\"some/dir\"").unwrap();
    assert!(c.get_string("train.out_dir").unwrap().ends_with("some/dir"));
    // get_string also renders non-string keys as TOML.
    assert_eq!(c.get_string("train.batch_size").unwrap(), "2");
    let dump = c.dump().unwrap();
    assert!(dump.contains("batch_size = 2"), "{dump}");
    assert!(
        dump.len() > 256,
        "dump longer than the first buffer is read whole"
    );
    let info = c.model_info().unwrap();
    assert!(info.parameters > 0 && info.bytes_total >= info.bytes_parameters);
}

#[test]
fn from_str_and_defaults() {
    let c = Config::from_str("[model]\nn_layer = 3\n").unwrap();
    assert_eq!(c.get_int("model.n_layer").unwrap(), 3);
    let c2: Config = "[train]\nbatch_size = 5\n".parse().unwrap();
    assert_eq!(c2.get_int("train.batch_size").unwrap(), 5);
    let d = Config::new().unwrap();
    assert!(d.get_int("model.vocab_size").unwrap() > 0);
    let _ = d.get_bool("data.shuffle").or_else(|e| {
        assert!(e.status().is_error());
        Ok::<bool, trainrt::Error>(false)
    });
}

#[test]
fn errors_have_status_code_name_and_message() {
    let mut c = Config::new().unwrap();
    let before = c.dump().unwrap();
    let e = c.set("optim.no_such_key", "1").unwrap_err();
    assert_eq!(e.status(), Status::Config);
    assert_eq!(e.code(), -2);
    assert!(!e.name().is_empty());
    assert!(e.message().contains("no_such_key"), "{e}");
    assert_eq!(
        c.dump().unwrap(),
        before,
        "a failed set leaves the config unchanged"
    );

    let e = c.get_int("optim.lr").unwrap_err();
    assert_eq!(e.status(), Status::Config, "wrong type: {e}");

    let e = Config::from_str("[model\n").unwrap_err();
    assert_eq!(e.status(), Status::Config);
    assert!(!e.message().is_empty());

    let e = Config::from_file("/nonexistent/run.toml").unwrap_err();
    assert_eq!(e.status(), Status::Io, "{e}");
    assert!(e.to_string().contains("nonexistent"), "{e}");

    let e = c.set("optim.lr\0x", "1").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);

    assert_eq!(Status::from_code(-8), Status::Busy);
    assert_eq!(Status::from_code(-99), Status::Other(-99));
    assert_eq!(Status::Busy.code(), -8);
}

#[test]
fn version_and_features() {
    assert_eq!(trainrt::abi_version(), trainrt::sys::TRAINRT_ABI_VERSION);
    assert_eq!(trainrt::version().split('.').count(), 3);
    assert_ne!(
        trainrt::build_features() & trainrt::sys::TRAINRT_FEATURE_CPU,
        0
    );
}

/// The refusal of a string holding a NUL: C would see only what comes before it.
fn assert_nul_refused(e: trainrt::Error, at: usize) {
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    assert!(
        e.message()
            .contains(&format!("holds a NUL character at byte {at} ")),
        "{e}"
    );
}

#[test]
fn nul_in_a_key_value_toml_or_path_is_invalid_argument() {
    // Each refused argument has a prefix the library would accept.
    let path = common::config_path();
    let mut with_nul = path.clone().into_os_string();
    with_nul.push("\0.bak");
    let n = path.as_os_str().len();
    assert_nul_refused(Config::from_file(&with_nul).unwrap_err(), n);
    assert_nul_refused(Config::from_checkpoint(&with_nul).unwrap_err(), n);
    let mut c = Config::from_file(&path).unwrap();
    let dump = c.dump().unwrap();
    assert_nul_refused(
        Config::from_str(&format!("{dump}\0[x]")).unwrap_err(),
        dump.len(),
    );
    assert_nul_refused(Config::from_str_in(&dump, Some(&with_nul)).unwrap_err(), n);
    assert_nul_refused(c.set("optim.lr\0x", "1e-3").unwrap_err(), 8);
    assert_nul_refused(c.set("optim.lr", "1e-3\0x").unwrap_err(), 4);
    assert_eq!(c.get_double("optim.lr").unwrap(), 0.003, "refused sets");
    c.set("optim.lr", "1e-3").unwrap();
    assert_eq!(c.get_double("optim.lr").unwrap(), 1e-3);
    assert_nul_refused(c.get_int("train.batch_size\0").unwrap_err(), 16);
    assert_nul_refused(c.get_double("optim.lr\0").unwrap_err(), 8);
    assert_nul_refused(c.get_bool("train.batch_size\0").unwrap_err(), 16);
    assert_nul_refused(c.get_string("data.sampler\0").unwrap_err(), 12);
    assert_eq!(c.get_string("data.sampler").unwrap(), "random");
}
