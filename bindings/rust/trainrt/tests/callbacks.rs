//! Log and progress closures, panics kept out of C, StopHandle across threads, Send/Sync.
use std::sync::{mpsc, Arc, Mutex};
use trainrt::{Config, LogLevel, Session, StopHandle, TrainOutcome};
mod common;

fn assert_send<T: Send>() {}
fn assert_send_sync_clone<T: Send + Sync + Clone>() {}

#[test]
fn thread_traits() {
    assert_send::<Session>();
    assert_send::<Config>();
    assert_send_sync_clone::<StopHandle>();
    // Session: !Sync is checked by the compile_fail doctest in lib.rs.
}

#[test]
fn config_log_closure_receives_session_lines() {
    let lines = Arc::new(Mutex::new(Vec::<(LogLevel, String)>::new()));
    let sink = Arc::clone(&lines);
    let mut cfg = Config::from_file(common::config_path()).unwrap();
    cfg.set_log(
        Some(Box::new(move |lvl, msg| {
            sink.lock().unwrap().push((lvl, msg.to_owned()))
        })),
        LogLevel::Info,
    )
    .unwrap();
    let mut s = Session::new(&cfg).unwrap();
    drop(cfg); // the session keeps the closure alive
    s.step().unwrap();
    assert!(
        !lines.lock().unwrap().is_empty(),
        "session creation logs at INFO"
    );
    assert!(lines
        .lock()
        .unwrap()
        .iter()
        .all(|(l, m)| *l >= LogLevel::Info && !m.contains('\n')));

    // Session sink overrides; a panicking sink is contained.
    let n = Arc::new(Mutex::new(0usize));
    let n2 = Arc::clone(&n);
    s.set_log(
        Some(Box::new(move |_, _| {
            *n2.lock().unwrap() += 1;
            panic!("log panic must not reach C");
        })),
        LogLevel::Debug,
    )
    .unwrap();
    s.train(2).unwrap(); // logs every step (log_every = 1): each line panics in the sink
    assert!(*n.lock().unwrap() > 0);
    assert_eq!(s.step().unwrap().step, 4);
    s.set_log(None, LogLevel::Warn).unwrap();
}

#[test]
fn progress_closure_can_stop_the_run() {
    let mut s = common::session();
    let mut calls = 0;
    let out = s.train_with(0, |p| {
        calls += 1;
        p.step < 3
    });
    assert_eq!(out.unwrap(), TrainOutcome::Stopped);
    assert_eq!(calls, 3);
    assert_eq!(s.metrics().unwrap().step, 3);
}

#[test]
fn panic_in_progress_closure_is_reraised_after_c_returns() {
    let mut s = common::session();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = s.train_with(0, |p| {
            if p.step == 2 {
                panic!("boom at step 2");
            }
            true
        });
    }));
    let msg = r.unwrap_err();
    assert_eq!(msg.downcast_ref::<&str>(), Some(&"boom at step 2"));
    // The run stopped cleanly after that step; the session is still usable.
    assert_eq!(s.metrics().unwrap().step, 2);
    assert_eq!(s.step().unwrap().step, 3);
}

#[test]
fn stop_handle_stops_train_from_another_thread() {
    let mut s = common::session();
    let stop = s.stop_handle();
    let (to_stopper, stopper_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let stopper = std::thread::spawn(move || {
        stopper_rx.recv().unwrap();
        let clone = stop.clone();
        clone.request_stop().unwrap();
        done_tx.send(()).unwrap();
    });
    let out = s
        .train_with(0, |p| {
            if p.step == 2 {
                to_stopper.send(()).unwrap();
                done_rx.recv().unwrap(); // the request is in before this step's call returns
            }
            true
        })
        .unwrap();
    stopper.join().unwrap();
    assert_eq!(out, TrainOutcome::Stopped);
    assert_eq!(s.metrics().unwrap().step, 2);

    // A request while no train() runs stops the next one at once.
    s.request_stop().unwrap();
    assert_eq!(s.train(0).unwrap(), TrainOutcome::Stopped);
}

#[test]
fn session_moves_between_threads_and_handle_outlives_it() {
    let s = common::session();
    let stop = s.stop_handle();
    let h = std::thread::spawn(move || {
        let mut s = s;
        s.step().unwrap().step
    });
    assert_eq!(h.join().unwrap(), 1);
    // The Session is gone; the handle still holds the C handle, so this is safe.
    stop.request_stop().unwrap();
}
