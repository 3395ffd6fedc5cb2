//! Puts libtrainrt's folder (found by trainrt-sys) on the example's rpath.
fn main() {
    if let Ok(dir) = std::env::var("DEP_TRAINRT_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
