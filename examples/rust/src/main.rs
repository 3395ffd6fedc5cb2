//! train_rust CONFIG.toml [STEPS]: trains through the Rust binding of libtrainrt, printing
//! each step's loss (STEPS defaults to the config's train.steps).
use std::process::ExitCode;

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: train_rust CONFIG.toml [STEPS]")?;
    let config = trainrt::Config::from_file(&path)?;
    let steps = match args.next() {
        Some(s) => s.parse()?,
        None => config.get_int("train.steps")?,
    };
    let mut session = trainrt::Session::new(&config)?;
    for _ in 0..steps {
        let r = session.step()?;
        println!(
            "step {} loss {:.6} lr {:.3e} ({:.1} ms)",
            r.step, r.loss, r.lr, r.ms
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train_rust: {e}");
            ExitCode::FAILURE
        }
    }
}
