//! Per-call overhead of the safe wrapper over the raw C call (printed, never asserted:
//! timings depend on the machine).
use std::ffi::CString;
use std::time::Instant;
mod common;

fn per_call_ns(n: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

#[test]
fn per_call_overhead() {
    let n = 200_000;
    let cfg = trainrt::Config::from_file(common::config_path()).unwrap();
    let mut s = trainrt::Session::new(&cfg).unwrap();
    let key = CString::new("train.batch_size").unwrap();
    let raw_cfg = cfg.as_raw();
    let raw_get = per_call_ns(n, || {
        let mut v = 0i64;
        // SAFETY: live handle, this thread only.
        assert_eq!(
            unsafe { trainrt::sys::trainrt_config_get_int(&mut v, raw_cfg, key.as_ptr()) },
            0
        );
        std::hint::black_box(v);
    });
    let safe_get = per_call_ns(n, || {
        std::hint::black_box(cfg.get_int("train.batch_size").unwrap());
    });
    let raw_s = s.as_raw();
    let raw_metrics = per_call_ns(n, || {
        let mut m = trainrt::sys::trainrt_metrics::default();
        // SAFETY: live handle, this thread only.
        assert_eq!(
            unsafe { trainrt::sys::trainrt_session_metrics(&mut m, raw_s) },
            0
        );
        std::hint::black_box(m);
    });
    let safe_metrics = per_call_ns(n, || {
        std::hint::black_box(s.metrics().unwrap());
    });
    println!(
        "overhead: config.get_int raw {raw_get:.0} ns, safe {safe_get:.0} ns (+{:.0} ns: key CString); \
         session.metrics raw {raw_metrics:.0} ns, safe {safe_metrics:.0} ns (+{:.0} ns)",
        safe_get - raw_get,
        safe_metrics - raw_metrics
    );
}
