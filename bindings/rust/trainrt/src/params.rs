//! The model's tensors (read and written as fp32) and the session's user metadata.
use crate::error::{check, Error, Result, Status};
use crate::session::Session;
use crate::util::{cstring, read_string};
use std::ffi::CString;
use std::os::raw::c_char;
use std::ptr;
use trainrt_sys as sys;

/// What a model tensor is for (`TRAINRT_PARAM_ROLE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamRole {
    TokenEmbedding,
    PositionEmbedding,
    /// A LayerNorm / RMSNorm weight.
    Norm,
    NormBias,
    /// A linear layer's weight.
    Linear,
    LinearBias,
    /// An untied output head.
    Head,
    /// A LoRA adapter's down projection `[r, in]`.
    LoraA,
    /// A LoRA adapter's up projection `[out, r]`.
    LoraB,
    /// A role this binding does not know (a newer library).
    Other(i32),
}

impl ParamRole {
    pub fn from_code(code: i32) -> ParamRole {
        match code {
            sys::TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING => ParamRole::TokenEmbedding,
            sys::TRAINRT_PARAM_ROLE_POSITION_EMBEDDING => ParamRole::PositionEmbedding,
            sys::TRAINRT_PARAM_ROLE_NORM => ParamRole::Norm,
            sys::TRAINRT_PARAM_ROLE_NORM_BIAS => ParamRole::NormBias,
            sys::TRAINRT_PARAM_ROLE_LINEAR => ParamRole::Linear,
            sys::TRAINRT_PARAM_ROLE_LINEAR_BIAS => ParamRole::LinearBias,
            sys::TRAINRT_PARAM_ROLE_HEAD => ParamRole::Head,
            sys::TRAINRT_PARAM_ROLE_LORA_A => ParamRole::LoraA,
            sys::TRAINRT_PARAM_ROLE_LORA_B => ParamRole::LoraB,
            other => ParamRole::Other(other),
        }
    }

    /// The C code (`TRAINRT_PARAM_ROLE_*`).
    pub fn code(self) -> i32 {
        match self {
            ParamRole::TokenEmbedding => sys::TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING,
            ParamRole::PositionEmbedding => sys::TRAINRT_PARAM_ROLE_POSITION_EMBEDDING,
            ParamRole::Norm => sys::TRAINRT_PARAM_ROLE_NORM,
            ParamRole::NormBias => sys::TRAINRT_PARAM_ROLE_NORM_BIAS,
            ParamRole::Linear => sys::TRAINRT_PARAM_ROLE_LINEAR,
            ParamRole::LinearBias => sys::TRAINRT_PARAM_ROLE_LINEAR_BIAS,
            ParamRole::Head => sys::TRAINRT_PARAM_ROLE_HEAD,
            ParamRole::LoraA => sys::TRAINRT_PARAM_ROLE_LORA_A,
            ParamRole::LoraB => sys::TRAINRT_PARAM_ROLE_LORA_B,
            ParamRole::Other(code) => code,
        }
    }
}

/// One tensor of the model, in the session's table order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// Its Hugging Face name ("wte.weight", "h.0.attn.c_attn.weight", ...).
    pub name: String,
    pub role: ParamRole,
    /// Its `ndim` dims, as in Hugging Face files.
    pub shape: Vec<usize>,
    /// Elements (the product of `shape`).
    pub numel: usize,
    /// Where it starts in the flat buffer of [`Session::read_params`]`(None)`:
    /// `&flat[p.offset..p.offset + p.numel]` is the tensor.
    pub offset: usize,
    /// The block it belongs to; `None` for the embeddings, the final norm and the head.
    pub layer: Option<u32>,
    /// `false`: frozen (a LoRA run's base, `train.trainable`).
    pub trainable: bool,
}

fn to_usize(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| {
        Error::new(
            Status::Internal,
            format!("library returned a negative {what}: {v}"),
        )
    })
}

impl ParamInfo {
    fn from_raw(name: String, p: &sys::trainrt_param_info) -> Result<ParamInfo> {
        let ndim = p.ndim.clamp(0, 4) as usize;
        Ok(ParamInfo {
            role: ParamRole::from_code(p.role),
            shape: p.shape[..ndim]
                .iter()
                .map(|&d| to_usize(d, "dimension"))
                .collect::<Result<_>>()?,
            numel: to_usize(p.numel, "numel")?,
            offset: to_usize(p.offset, "offset")?,
            layer: u32::try_from(p.layer).ok(),
            trainable: p.trainable != 0,
            name,
        })
    }
}

/// `name` as a C string, or NULL for `None` (the flat buffer).
fn opt_cstring(name: Option<&str>) -> Result<Option<CString>> {
    name.map(cstring).transpose()
}

fn opt_ptr(name: &Option<CString>) -> *const c_char {
    name.as_ref().map_or(ptr::null(), |n| n.as_ptr())
}

impl Session {
    /// (number of tensors, floats in the flat buffer).
    pub fn param_count(&mut self) -> Result<(usize, usize)> {
        let (mut tensors, mut numel) = (0i64, 0i64);
        let raw = self.as_raw();
        // SAFETY: live handle, unique use (&mut self); out pointers to locals.
        check(unsafe { sys::trainrt_session_param_count(&mut tensors, &mut numel, raw) })?;
        Ok((to_usize(tensors, "count")?, to_usize(numel, "numel")?))
    }

    /// Tensor `index` (0 .. the count of [`param_count`](Self::param_count)).
    pub fn param_info(&mut self, index: usize) -> Result<ParamInfo> {
        let raw = self.as_raw();
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        let mut info = sys::trainrt_param_info::default();
        // SAFETY: as param_count; info carries its size and version; buffer from read_string.
        let name = read_string(|buf, cap, needed| unsafe {
            sys::trainrt_session_param_info(&mut info, buf, cap, needed, raw, index)
        })?;
        ParamInfo::from_raw(name, &info)
    }

    /// Every tensor of the model, in table order (embeddings, each block, final norm, head;
    /// a LoRA run's adapters after the linear they adapt).
    pub fn params(&mut self) -> Result<Vec<ParamInfo>> {
        let (count, _) = self.param_count()?;
        (0..count).map(|i| self.param_info(i)).collect()
    }

    /// The fp32 master weights (as a checkpoint would save them) of the tensor `name`, or
    /// with `None` of every tensor back to back (the flat buffer; [`ParamInfo::offset`] says
    /// where each starts). An unknown name is `InvalidArgument`, its message naming the
    /// closest tensor.
    pub fn read_params(&mut self, name: Option<&str>) -> Result<Vec<f32>> {
        let n = match name {
            None => self.param_count()?.1,
            Some(n) => self
                .params()?
                .into_iter()
                .find(|p| p.name == n)
                .map_or(0, |p| p.numel),
        };
        // An unknown name reaches the library (with one float): its error says which name
        // comes closest.
        let mut out = vec![0f32; n.max(1)];
        self.read_params_into(name, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// [`read_params`](Self::read_params) into `out`, which must hold exactly the tensor's
    /// (or the flat buffer's) number of floats, else `InvalidArgument`.
    pub fn read_params_into(&mut self, name: Option<&str>, out: &mut [f32]) -> Result<()> {
        let name = opt_cstring(name)?;
        let raw = self.as_raw();
        let mut one = [0f32; 1];
        // A non-NULL pointer even for an empty slice (the library's size check then speaks).
        let (p, len) = if out.is_empty() {
            (one.as_mut_ptr(), 0)
        } else {
            (out.as_mut_ptr(), out.len())
        };
        // SAFETY: live handle (&mut self); p is valid for len floats; name NULL or a C string.
        check(unsafe { sys::trainrt_session_read_params(p, len, raw, opt_ptr(&name)) }).map(|_| ())
    }

    /// Replaces the tensor `name` (`None`: every tensor, from a flat buffer) with `values`,
    /// which must hold exactly its number of floats. The bf16/fp16 working copies follow; the
    /// optimizer's moments, step and schedule are kept. Refused with the session unchanged:
    /// a size mismatch or an unknown name (`InvalidArgument`), a NaN or infinity
    /// (`NonFinite`).
    pub fn write_params(&mut self, name: Option<&str>, values: &[f32]) -> Result<()> {
        let name = opt_cstring(name)?;
        let raw = self.as_raw();
        let one = [0f32; 1];
        let p = if values.is_empty() {
            one.as_ptr()
        } else {
            values.as_ptr()
        };
        // SAFETY: live handle (&mut self); p is valid for values.len() floats.
        check(unsafe { sys::trainrt_session_write_params(raw, opt_ptr(&name), p, values.len()) })
            .map(|_| ())
    }

    /// Sets a user metadata key (1-128 bytes of `[A-Za-z0-9_.-]`) to `value` (up to 64 KiB;
    /// at most 256 keys). Checkpoints save them; [`load`](Self::load) restores them.
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<()> {
        let (k, v) = (cstring(key)?, cstring(value)?);
        let raw = self.as_raw();
        // SAFETY: live handle (&mut self); valid C strings.
        check(unsafe { sys::trainrt_session_set_metadata(raw, k.as_ptr(), v.as_ptr()) }).map(|_| ())
    }

    /// Removes a metadata key (no error if absent).
    pub fn remove_metadata(&mut self, key: &str) -> Result<()> {
        let k = cstring(key)?;
        let raw = self.as_raw();
        // SAFETY: as set_metadata; value NULL removes.
        check(unsafe { sys::trainrt_session_set_metadata(raw, k.as_ptr(), ptr::null()) })
            .map(|_| ())
    }

    /// The value of a metadata key; `None` when the session has no such key.
    pub fn metadata(&mut self, key: &str) -> Result<Option<String>> {
        let k = cstring(key)?;
        let raw = self.as_raw();
        let mut found = 0i32;
        // SAFETY: as set_metadata; buffer from read_string; found points to a local.
        let value = read_string(|buf, cap, needed| unsafe {
            sys::trainrt_session_get_metadata(buf, cap, needed, &mut found, raw, k.as_ptr())
        })?;
        Ok(if found != 0 { Some(value) } else { None })
    }

    /// Every metadata key, sorted bytewise.
    pub fn metadata_keys(&mut self) -> Result<Vec<String>> {
        let raw = self.as_raw();
        let mut count = 0i64;
        // SAFETY: as set_metadata; out pointer to a local.
        check(unsafe { sys::trainrt_session_metadata_count(&mut count, raw) })?;
        (0..count)
            .map(|i| {
                // SAFETY: as above; buffer from read_string.
                read_string(|buf, cap, needed| unsafe {
                    sys::trainrt_session_metadata_key(buf, cap, needed, raw, i)
                })
            })
            .collect()
    }
}
