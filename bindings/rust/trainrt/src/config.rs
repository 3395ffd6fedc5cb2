use crate::callbacks::{log_trampoline, LogCallback, LogLevel, LogSink};
use crate::error::{check, Error, Result};
use crate::util::{cpath, cstring, read_string};
use std::cell::Cell;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;
use std::sync::Arc;
use trainrt_sys as sys;

/// A run configuration (a validated TOML document; docs/CONFIG.md lists every key).
///
/// `Send` but not `Sync`: libtrainrt refuses concurrent use of one handle (BUSY).
pub struct Config {
    raw: *mut sys::trainrt_config,
    /// The log sink set with [`Config::set_log`]; sessions created from this config share it.
    pub(crate) log: Option<Arc<LogSink>>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: libtrainrt handles may move between threads; Config is !Sync, so at most one thread
// uses the handle at a time. The log sink is Send (its closure is Send behind a Mutex).
unsafe impl Send for Config {}

/// Sizes of a config's model, computed without allocating it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    pub parameters: i64,
    pub flops_per_token: f64,
    pub bytes_parameters: i64,
    pub bytes_optimizer: i64,
    pub bytes_activations: i64,
    pub bytes_total: i64,
    /// The parameters that train (all, or LoRA adapters and `train.trainable`'s tensors).
    pub trainable_parameters: i64,
}

impl Config {
    fn wrap(create: impl FnOnce(*mut *mut sys::trainrt_config) -> i32) -> Result<Config> {
        let mut raw = ptr::null_mut();
        check(create(&mut raw))?;
        Ok(Config {
            raw,
            log: None,
            _not_sync: PhantomData,
        })
    }

    /// All defaults.
    pub fn new() -> Result<Config> {
        // SAFETY: out pointer to a local.
        Config::wrap(|out| unsafe { sys::trainrt_config_create(out) })
    }

    /// Parses a TOML file; relative paths in it resolve against its folder.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Config> {
        let path = cpath(path.as_ref())?;
        // SAFETY: valid C string for the call.
        Config::wrap(|out| unsafe { sys::trainrt_config_from_file(out, path.as_ptr()) })
    }

    /// Parses TOML text; relative paths resolve against the current directory.
    #[allow(clippy::should_implement_trait)] // also implements FromStr; this needs no import
    pub fn from_str(toml: &str) -> Result<Config> {
        Config::from_str_in(toml, None::<&Path>)
    }

    /// Parses TOML text; relative paths resolve against `base_dir` (None: current directory).
    pub fn from_str_in(toml: &str, base_dir: Option<impl AsRef<Path>>) -> Result<Config> {
        let toml = cstring(toml)?;
        let base = base_dir.map(|d| cpath(d.as_ref())).transpose()?;
        let base_ptr = base.as_ref().map_or(ptr::null(), |b| b.as_ptr());
        // SAFETY: valid C strings (or NULL base) for the call.
        Config::wrap(|out| unsafe { sys::trainrt_config_from_string(out, toml.as_ptr(), base_ptr) })
    }

    /// The run config a checkpoint was trained with (path: a checkpoint or an out_dir).
    pub fn from_checkpoint(path: impl AsRef<Path>) -> Result<Config> {
        let path = cpath(path.as_ref())?;
        // SAFETY: valid C string for the call.
        Config::wrap(|out| unsafe { sys::trainrt_config_from_checkpoint(out, path.as_ptr()) })
    }

    /// Sets one key from a TOML value: `set("optim.lr", "1e-3")`,
    /// `set("data.train", "\"train.bin\"")`. On error the config is unchanged.
    pub fn set(&mut self, key: &str, toml_value: &str) -> Result<()> {
        let (k, v) = (cstring(key)?, cstring(toml_value)?);
        // SAFETY: live handle, used by this thread only (&mut self).
        check(unsafe { sys::trainrt_config_set(self.raw, k.as_ptr(), v.as_ptr()) }).map(|_| ())
    }

    pub fn get_int(&self, key: &str) -> Result<i64> {
        let k = cstring(key)?;
        let mut v = 0i64;
        // SAFETY: live handle; Config is !Sync so no other thread uses it.
        check(unsafe { sys::trainrt_config_get_int(&mut v, self.raw, k.as_ptr()) })?;
        Ok(v)
    }

    pub fn get_double(&self, key: &str) -> Result<f64> {
        let k = cstring(key)?;
        let mut v = 0f64;
        // SAFETY: as get_int.
        check(unsafe { sys::trainrt_config_get_double(&mut v, self.raw, k.as_ptr()) })?;
        Ok(v)
    }

    pub fn get_bool(&self, key: &str) -> Result<bool> {
        let k = cstring(key)?;
        let mut v = 0i32;
        // SAFETY: as get_int.
        check(unsafe { sys::trainrt_config_get_bool(&mut v, self.raw, k.as_ptr()) })?;
        Ok(v != 0)
    }

    /// A string key's value; any other key as its TOML text.
    pub fn get_string(&self, key: &str) -> Result<String> {
        let k = cstring(key)?;
        // SAFETY: as get_int; buf/cap/needed come from read_string.
        read_string(|buf, cap, needed| unsafe {
            sys::trainrt_config_get_string(buf, cap, needed, self.raw, k.as_ptr())
        })
    }

    /// The whole resolved config as TOML (defaults included).
    pub fn dump(&self) -> Result<String> {
        // SAFETY: as get_string.
        read_string(|buf, cap, needed| unsafe {
            sys::trainrt_config_dump(buf, cap, needed, self.raw)
        })
    }

    /// Log sink for sessions created from this config (so they log their first lines there).
    /// `None`: the process default.
    pub fn set_log(&mut self, f: Option<LogCallback>, min_level: LogLevel) -> Result<()> {
        let sink = f.map(LogSink::new);
        let (cb, payload): (sys::trainrt_log_fn, _) = match &sink {
            Some(s) => (Some(log_trampoline), s.payload()),
            None => (None, ptr::null_mut()),
        };
        // SAFETY: the sink is kept by self (and by every session created from self) for as
        // long as C can call it.
        check(unsafe { sys::trainrt_config_set_log(self.raw, cb, payload, min_level as i32) })?;
        self.log = sink;
        Ok(())
    }

    /// What this config's model costs, without allocating it.
    pub fn model_info(&self) -> Result<ModelInfo> {
        let mut m = sys::trainrt_model_info::default();
        // SAFETY: struct initialised with its size and version.
        check(unsafe { sys::trainrt_config_model_info(&mut m, self.raw) })?;
        Ok(ModelInfo {
            parameters: m.parameters,
            flops_per_token: m.flops_per_token,
            bytes_parameters: m.bytes_parameters,
            bytes_optimizer: m.bytes_optimizer,
            bytes_activations: m.bytes_activations,
            bytes_total: m.bytes_total,
            trainable_parameters: m.trainable_parameters,
        })
    }

    /// The raw handle (still owned by this Config).
    pub fn as_raw(&self) -> *mut sys::trainrt_config {
        self.raw
    }
}

impl std::str::FromStr for Config {
    type Err = Error;
    fn from_str(toml: &str) -> Result<Config> {
        Config::from_str_in(toml, None::<&Path>)
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        // SAFETY: we own the handle; destroy accepts it once. self.log drops after this.
        unsafe { sys::trainrt_config_destroy(self.raw) }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config").field("raw", &self.raw).finish()
    }
}
