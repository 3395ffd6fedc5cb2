//! Finds libtrainrt: $TRAINRT_LIB_DIR, else `pkg-config --libs-only-L trainrt`, else the
//! linker's default search path. Adds an rpath for the folder found so binaries run without
//! LD_LIBRARY_PATH.
use std::env;
use std::path::Path;
use std::process::Command;

fn add_dir(dir: &str) {
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    // Exported to dependents as DEP_TRAINRT_LIB_DIR.
    println!("cargo:lib_dir={dir}");
}

fn from_pkg_config() -> Vec<String> {
    let Ok(out) = Command::new("pkg-config")
        .args(["--libs-only-L", "trainrt"])
        .output()
    else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(str::to_owned)
        .collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=TRAINRT_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    match env::var("TRAINRT_LIB_DIR") {
        Ok(dir) if !dir.is_empty() => {
            let dir = Path::new(&dir)
                .canonicalize()
                .map(|p| p.display().to_string())
                .unwrap_or(dir);
            add_dir(&dir);
        }
        _ => from_pkg_config().iter().for_each(|d| add_dir(d)),
    }
    println!("cargo:rustc-link-lib=dylib=trainrt");
}
