//! lora_rust CONFIG.toml WORKDIR: LoRA fine-tuning through the Rust binding of libtrainrt.
//! Trains CONFIG's model two steps and exports it as the base (a Hugging Face folder), then
//! fine-tunes rank-4 adapters on every linear layer of the frozen base, exports them as a PEFT
//! folder and the merged model, and checks that the adapters reloaded with lora.init_from, and
//! the merged model, compute the fine-tuned model's validation loss.
use std::path::Path;
use std::process::ExitCode;

fn quoted(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: lora_rust CONFIG.toml WORKDIR";
    let config_path = args.next().ok_or(usage)?;
    let work = std::path::PathBuf::from(args.next().ok_or(usage)?);
    std::fs::create_dir_all(&work)?;
    let (base, adapter, merged) = (work.join("base"), work.join("adapter"), work.join("merged"));

    // The base model: any Hugging Face folder would do.
    let mut config = trainrt::Config::from_file(&config_path)?;
    let mut pretrain = trainrt::Session::new(&config)?;
    pretrain.step()?;
    pretrain.step()?;
    pretrain.export(&base, trainrt::Dtype::F32)?;

    // LoRA on the frozen base.
    config.set("model.init_from", &quoted(&base))?;
    config.set("lora.rank", "4")?;
    config.set("lora.alpha", "8.0")?;
    config.set("lora.target_modules", "[\"all-linear\"]")?;
    let mut lora = trainrt::Session::new(&config)?;
    for _ in 0..4 {
        let r = lora.step()?;
        println!("lora step {} loss {:.6} grad_norm {:.4}", r.step, r.loss, r.grad_norm);
    }
    let tuned = lora.eval()?;
    lora.export_adapter(&adapter, trainrt::Dtype::F32)?;
    lora.export(&merged, trainrt::Dtype::F32)?;

    // The adapters back on the base: the same model, bit for bit.
    config.set("lora.init_from", &quoted(&adapter))?;
    let reloaded = trainrt::Session::new(&config)?.eval()?;
    // The merged model: a plain model of the same function (up to float rounding).
    let mut plain = trainrt::Config::from_file(&config_path)?;
    plain.set("model.init_from", &quoted(&merged))?;
    let merged_loss = trainrt::Session::new(&plain)?.eval()?;
    println!("val loss: fine-tuned {tuned:.6}, adapter reloaded {reloaded:.6}, merged {merged_loss:.6}");
    if reloaded.to_bits() != tuned.to_bits() {
        return Err("the reloaded adapter computes another loss".into());
    }
    if (merged_loss - tuned).abs() > 1e-5 * tuned.abs() {
        return Err("the merged model computes another loss".into());
    }
    println!("lora: ok ({} and {})", adapter.display(), merged.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lora_rust: {e}");
            ExitCode::FAILURE
        }
    }
}
