//! Raw FFI declarations for libtrainrt, written by hand from `include/trainrt/trainrt.h`
//! (ABI version 0). Everything here is `unsafe` and mirrors the C header one to one; use the
//! `trainrt` crate for a safe API.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

pub const TRAINRT_VERSION_MAJOR: u32 = 0;
pub const TRAINRT_VERSION_MINOR: u32 = 1;
pub const TRAINRT_VERSION_PATCH: u32 = 0;
pub const TRAINRT_ABI_VERSION: u32 = 0;

pub const TRAINRT_FEATURE_CPU: u64 = 1 << 0;
pub const TRAINRT_FEATURE_OPENMP: u64 = 1 << 1;
pub const TRAINRT_FEATURE_OPENBLAS: u64 = 1 << 2;
pub const TRAINRT_FEATURE_CUDA_MODULE: u64 = 1 << 3;
pub const TRAINRT_FEATURE_CUDNN: u64 = 1 << 4;
pub const TRAINRT_FEATURE_NCCL: u64 = 1 << 5;
pub const TRAINRT_FEATURE_MPI: u64 = 1 << 6;
pub const TRAINRT_FEATURE_ONEDNN: u64 = 1 << 7;

pub type trainrt_status = i32;
pub const TRAINRT_OK: trainrt_status = 0;
pub const TRAINRT_STOPPED: trainrt_status = 1;
pub const TRAINRT_ERR_INVALID_ARGUMENT: trainrt_status = -1;
pub const TRAINRT_ERR_CONFIG: trainrt_status = -2;
pub const TRAINRT_ERR_IO: trainrt_status = -3;
pub const TRAINRT_ERR_FORMAT: trainrt_status = -4;
pub const TRAINRT_ERR_OUT_OF_MEMORY: trainrt_status = -5;
pub const TRAINRT_ERR_DEVICE: trainrt_status = -6;
pub const TRAINRT_ERR_UNSUPPORTED: trainrt_status = -7;
pub const TRAINRT_ERR_BUSY: trainrt_status = -8;
pub const TRAINRT_ERR_CANCELLED: trainrt_status = -9;
pub const TRAINRT_ERR_VERSION_MISMATCH: trainrt_status = -10;
pub const TRAINRT_ERR_INTERNAL: trainrt_status = -11;
pub const TRAINRT_ERR_DEVICE_LOST: trainrt_status = -12;
pub const TRAINRT_ERR_NON_FINITE: trainrt_status = -13;

pub const TRAINRT_LOG_DEBUG: i32 = 0;
pub const TRAINRT_LOG_INFO: i32 = 1;
pub const TRAINRT_LOG_WARN: i32 = 2;
pub const TRAINRT_LOG_ERROR: i32 = 3;

pub const TRAINRT_PROGRESS_STEP: i32 = 0;
pub const TRAINRT_PROGRESS_EVAL: i32 = 1;

pub const TRAINRT_DTYPE_F32: i32 = 0;
pub const TRAINRT_DTYPE_BF16: i32 = 1;

pub const TRAINRT_STEP_RESULT_VERSION: u32 = 1;
pub const TRAINRT_EVAL_RESULT_VERSION: u32 = 1;
pub const TRAINRT_METRICS_VERSION: u32 = 4;
pub const TRAINRT_PROGRESS_VERSION: u32 = 1;
pub const TRAINRT_SAMPLE_OPTIONS_VERSION: u32 = 2;
pub const TRAINRT_MODEL_INFO_VERSION: u32 = 2;
pub const TRAINRT_PREPARE_OPTIONS_VERSION: u32 = 3;
pub const TRAINRT_PREPARE_RESULT_VERSION: u32 = 3;
pub const TRAINRT_PARAM_INFO_VERSION: u32 = 1;

pub const TRAINRT_LOSS_MASK_DEFAULT: i32 = 0;
pub const TRAINRT_LOSS_MASK_ASSISTANT: i32 = 1;
pub const TRAINRT_LOSS_MASK_COMPLETION: i32 = 2;
pub const TRAINRT_LOSS_MASK_ALL: i32 = 3;

pub const TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING: i32 = 0;
pub const TRAINRT_PARAM_ROLE_POSITION_EMBEDDING: i32 = 1;
pub const TRAINRT_PARAM_ROLE_NORM: i32 = 2;
pub const TRAINRT_PARAM_ROLE_NORM_BIAS: i32 = 3;
pub const TRAINRT_PARAM_ROLE_LINEAR: i32 = 4;
pub const TRAINRT_PARAM_ROLE_LINEAR_BIAS: i32 = 5;
pub const TRAINRT_PARAM_ROLE_HEAD: i32 = 6;
pub const TRAINRT_PARAM_ROLE_LORA_A: i32 = 7;
pub const TRAINRT_PARAM_ROLE_LORA_B: i32 = 8;

/// Opaque `trainrt_config`.
#[repr(C)]
pub struct trainrt_config {
    _private: [u8; 0],
}

/// Opaque `trainrt_session`.
#[repr(C)]
pub struct trainrt_session {
    _private: [u8; 0],
}

/// Opaque `trainrt_tokenizer` (immutable once loaded: usable by several threads at once).
#[repr(C)]
pub struct trainrt_tokenizer {
    _private: [u8; 0],
}

/// Opaque `trainrt_chat_template` (immutable once loaded: usable by several threads at once).
#[repr(C)]
pub struct trainrt_chat_template {
    _private: [u8; 0],
}

pub type trainrt_log_fn =
    Option<unsafe extern "C" fn(level: i32, message: *const c_char, payload: *mut c_void)>;
pub type trainrt_progress_fn =
    Option<unsafe extern "C" fn(progress: *const trainrt_progress, payload: *mut c_void) -> i32>;
pub type trainrt_prepare_progress_fn =
    Option<unsafe extern "C" fn(done: i64, total: i64, payload: *mut c_void) -> i32>;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_step_result {
    pub struct_size: u32,
    pub version: u32,
    pub step: i64,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub tokens: i64,
    pub tokens_total: i64,
    pub ms: f64,
}

/// A whole evaluation: every target of a token stream scored exactly once.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_eval_result {
    pub struct_size: u32,
    pub version: u32,
    pub loss: f64,
    pub perplexity: f64,
    pub tokens: i64,
    pub windows: i64,
}

impl Default for trainrt_eval_result {
    /// `TRAINRT_EVAL_RESULT_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_EVAL_RESULT_VERSION,
            loss: 0.0,
            perplexity: 0.0,
            tokens: 0,
            windows: 0,
        }
    }
}

impl Default for trainrt_step_result {
    /// `TRAINRT_STEP_RESULT_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_STEP_RESULT_VERSION,
            step: 0,
            loss: 0.0,
            lr: 0.0,
            grad_norm: 0.0,
            tokens: 0,
            tokens_total: 0,
            ms: 0.0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_metrics {
    pub struct_size: u32,
    pub version: u32,
    pub step: i64,
    pub tokens_total: i64,
    pub tokens_per_s: f64,
    pub step_ms_p50: f64,
    pub step_ms_p95: f64,
    pub bytes_in_use: i64,
    pub last_loss: f64,
    pub last_val_loss: f64,
    pub bytes_reserved: i64,
    pub skipped_steps: i64,
    pub loss_scale: f64,
    // version 3
    pub model_flops_per_token: f64,
    pub peak_flops: f64,
    pub mfu: f64,
    // version 4
    pub rank: i32,
    pub world_size: i32,
}

impl Default for trainrt_metrics {
    /// `TRAINRT_METRICS_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_METRICS_VERSION,
            step: 0,
            tokens_total: 0,
            tokens_per_s: 0.0,
            step_ms_p50: 0.0,
            step_ms_p95: 0.0,
            bytes_in_use: 0,
            last_loss: 0.0,
            last_val_loss: 0.0,
            bytes_reserved: 0,
            skipped_steps: 0,
            loss_scale: 0.0,
            model_flops_per_token: 0.0,
            peak_flops: 0.0,
            mfu: 0.0,
            rank: 0,
            world_size: 1,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_progress {
    pub struct_size: u32,
    pub version: u32,
    pub kind: i32,
    pub reserved: i32,
    pub step: i64,
    pub steps_total: i64,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub tokens_total: i64,
    pub ms: f64,
    pub tokens_per_s: f64,
    pub elapsed_s: f64,
    pub eta_s: f64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_sample_options {
    pub struct_size: u32,
    pub version: u32,
    pub temperature: f64,
    pub top_k: i32,
    pub reserved: i32,
    pub seed: u64,
    /// Version 2: ids that end `trainrt_session_generate`; `n_stop_ids` of them.
    pub stop_ids: *const i32,
    pub n_stop_ids: usize,
}

impl Default for trainrt_sample_options {
    /// `TRAINRT_SAMPLE_OPTIONS_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_SAMPLE_OPTIONS_VERSION,
            temperature: 1.0,
            top_k: 0,
            reserved: 0,
            seed: 1337,
            stop_ids: std::ptr::null(),
            n_stop_ids: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct trainrt_model_info {
    pub struct_size: u32,
    pub version: u32,
    pub parameters: i64,
    pub flops_per_token: f64,
    pub bytes_parameters: i64,
    pub bytes_optimizer: i64,
    pub bytes_activations: i64,
    pub bytes_total: i64,
    pub trainable_parameters: i64,
}

impl Default for trainrt_model_info {
    /// `TRAINRT_MODEL_INFO_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_MODEL_INFO_VERSION,
            parameters: 0,
            flops_per_token: 0.0,
            bytes_parameters: 0,
            bytes_optimizer: 0,
            bytes_activations: 0,
            bytes_total: 0,
            trainable_parameters: 0,
        }
    }
}

/// No `PartialEq`: function pointers do not compare reliably.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct trainrt_prepare_options {
    pub struct_size: u32,
    pub version: u32,
    pub tokenizer: *const c_char,
    pub jsonl_field: *const c_char,
    pub val_fraction: f64,
    pub threads: i32,
    pub reserved: i32,
    pub progress: trainrt_prepare_progress_fn,
    pub progress_payload: *mut c_void,
    /// Version 2.
    pub shard_tokens: i64,
    /// Version 3: chat data (`TRAINRT_LOSS_MASK_*`).
    pub chat: i32,
    pub loss_mask: i32,
    pub chat_template: *const c_char,
    pub template_vars: *const c_char,
}

impl Default for trainrt_prepare_options {
    /// `TRAINRT_PREPARE_OPTIONS_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_PREPARE_OPTIONS_VERSION,
            tokenizer: std::ptr::null(),
            jsonl_field: std::ptr::null(),
            val_fraction: 0.0,
            threads: 0,
            reserved: 0,
            progress: None,
            progress_payload: std::ptr::null_mut(),
            shard_tokens: 0,
            chat: 0,
            loss_mask: 0,
            chat_template: std::ptr::null(),
            template_vars: std::ptr::null(),
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct trainrt_prepare_result {
    pub struct_size: u32,
    pub version: u32,
    pub documents: i64,
    pub train_tokens: i64,
    pub val_tokens: i64,
    pub bytes: i64,
    pub token_bytes: i32,
    pub vocab_size: i32,
    pub eos_id: i32,
    pub reserved: i32,
    /// Version 2.
    pub train_shards: i32,
    pub val_shards: i32,
    /// Version 3 (chat data).
    pub examples: i64,
    pub target_tokens: i64,
    pub per_turn: i64,
}

impl Default for trainrt_prepare_result {
    /// `TRAINRT_PREPARE_RESULT_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_PREPARE_RESULT_VERSION,
            documents: 0,
            train_tokens: 0,
            val_tokens: 0,
            bytes: 0,
            token_bytes: 0,
            vocab_size: 0,
            eos_id: 0,
            reserved: 0,
            train_shards: 0,
            val_shards: 0,
            examples: 0,
            target_tokens: 0,
            per_turn: 0,
        }
    }
}

/// One model tensor, as `trainrt_session_param_info` describes it (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct trainrt_param_info {
    pub struct_size: u32,
    pub version: u32,
    /// `TRAINRT_PARAM_ROLE_*`.
    pub role: i32,
    /// 1 or 2.
    pub ndim: i32,
    /// As in Hugging Face files; dims past `ndim` are 0.
    pub shape: [i64; 4],
    pub numel: i64,
    /// First element in the flat buffer.
    pub offset: i64,
    /// The block it belongs to; -1 for embeddings, final norm, head.
    pub layer: i32,
    /// 1: the optimizer updates it; 0: frozen.
    pub trainable: i32,
}

impl Default for trainrt_param_info {
    /// `TRAINRT_PARAM_INFO_INIT`.
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            version: TRAINRT_PARAM_INFO_VERSION,
            role: 0,
            ndim: 0,
            shape: [0; 4],
            numel: 0,
            offset: 0,
            layer: 0,
            trainable: 0,
        }
    }
}

extern "C" {
    pub fn trainrt_version_string() -> *const c_char;
    pub fn trainrt_abi_version() -> u32;
    pub fn trainrt_build_features() -> u64;

    pub fn trainrt_status_string(status: trainrt_status) -> *const c_char;
    pub fn trainrt_last_error_message() -> *const c_char;

    pub fn trainrt_log_set_default(
        f: trainrt_log_fn,
        payload: *mut c_void,
        min_level: i32,
    ) -> trainrt_status;

    pub fn trainrt_config_create(out: *mut *mut trainrt_config) -> trainrt_status;
    pub fn trainrt_config_from_file(
        out: *mut *mut trainrt_config,
        path: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_from_string(
        out: *mut *mut trainrt_config,
        toml: *const c_char,
        base_dir: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_destroy(config: *mut trainrt_config);
    pub fn trainrt_config_set(
        config: *mut trainrt_config,
        key: *const c_char,
        toml_value: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_get_int(
        out: *mut i64,
        config: *const trainrt_config,
        key: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_get_double(
        out: *mut f64,
        config: *const trainrt_config,
        key: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_get_bool(
        out: *mut i32,
        config: *const trainrt_config,
        key: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_get_string(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        config: *const trainrt_config,
        key: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_dump(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        config: *const trainrt_config,
    ) -> trainrt_status;
    pub fn trainrt_config_set_log(
        config: *mut trainrt_config,
        f: trainrt_log_fn,
        payload: *mut c_void,
        min_level: i32,
    ) -> trainrt_status;

    pub fn trainrt_step_result_init(result: *mut trainrt_step_result);
    pub fn trainrt_metrics_init(metrics: *mut trainrt_metrics);

    pub fn trainrt_session_create(
        out: *mut *mut trainrt_session,
        config: *const trainrt_config,
    ) -> trainrt_status;
    pub fn trainrt_session_destroy(session: *mut trainrt_session);
    pub fn trainrt_session_set_log(
        session: *mut trainrt_session,
        f: trainrt_log_fn,
        payload: *mut c_void,
        min_level: i32,
    ) -> trainrt_status;
    pub fn trainrt_session_step(
        out: *mut trainrt_step_result,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_step_tokens(
        out: *mut trainrt_step_result,
        session: *mut trainrt_session,
        tokens: *const i32,
        n_tokens: usize,
    ) -> trainrt_status;
    pub fn trainrt_session_step_masked(
        out: *mut trainrt_step_result,
        session: *mut trainrt_session,
        tokens: *const i32,
        n_tokens: usize,
        loss_mask: *const u8,
        positions: *const i32,
        n_mask: usize,
    ) -> trainrt_status;
    pub fn trainrt_session_sync(
        out: *mut trainrt_step_result,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_eval(
        out_loss: *mut f64,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_eval_result_init(result: *mut trainrt_eval_result);
    pub fn trainrt_session_eval_whole(
        out: *mut trainrt_eval_result,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_eval_tokens(
        out: *mut trainrt_eval_result,
        session: *mut trainrt_session,
        tokens: *const i32,
        n_tokens: usize,
    ) -> trainrt_status;
    pub fn trainrt_session_eval_text(
        out: *mut trainrt_eval_result,
        session: *mut trainrt_session,
        text: *const c_char,
        len: usize,
        tokenizer: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_session_forward(
        out_loss: *mut f64,
        logits: *mut f32,
        logits_cap: usize,
        session: *mut trainrt_session,
        tokens: *const i32,
        rows: i64,
        seq_len: i64,
    ) -> trainrt_status;
    pub fn trainrt_session_train(
        session: *mut trainrt_session,
        n_steps: i64,
        callback: trainrt_progress_fn,
        payload: *mut c_void,
    ) -> trainrt_status;
    pub fn trainrt_session_request_stop(session: *mut trainrt_session) -> trainrt_status;
    pub fn trainrt_session_metrics(
        out: *mut trainrt_metrics,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_config_dump(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        session: *mut trainrt_session,
    ) -> trainrt_status;

    pub fn trainrt_session_save(
        path_buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        session: *mut trainrt_session,
        dir: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_session_load(
        session: *mut trainrt_session,
        path: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_checkpoint_latest(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        out_dir: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_config_from_checkpoint(
        out: *mut *mut trainrt_config,
        path: *const c_char,
    ) -> trainrt_status;

    pub fn trainrt_session_export(
        session: *mut trainrt_session,
        out_dir: *const c_char,
        dtype: i32,
    ) -> trainrt_status;
    pub fn trainrt_checkpoint_export(
        path: *const c_char,
        out_dir: *const c_char,
        dtype: i32,
    ) -> trainrt_status;
    pub fn trainrt_session_export_adapter(
        session: *mut trainrt_session,
        out_dir: *const c_char,
        dtype: i32,
    ) -> trainrt_status;
    pub fn trainrt_checkpoint_export_adapter(
        path: *const c_char,
        out_dir: *const c_char,
        dtype: i32,
    ) -> trainrt_status;

    pub fn trainrt_sample_options_init(options: *mut trainrt_sample_options);
    pub fn trainrt_session_sample(
        out: *mut i32,
        out_cap: usize,
        session: *mut trainrt_session,
        prompt: *const i32,
        n_prompt: usize,
        n_new: usize,
        options: *const trainrt_sample_options,
    ) -> trainrt_status;
    pub fn trainrt_session_generate(
        out_n: *mut usize,
        out: *mut i32,
        out_cap: usize,
        session: *mut trainrt_session,
        prompt: *const i32,
        n_prompt: usize,
        max_new: usize,
        options: *const trainrt_sample_options,
    ) -> trainrt_status;

    pub fn trainrt_param_info_init(info: *mut trainrt_param_info);
    pub fn trainrt_session_param_count(
        out_tensors: *mut i64,
        out_numel: *mut i64,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_param_info(
        out: *mut trainrt_param_info,
        name_buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        session: *mut trainrt_session,
        index: i64,
    ) -> trainrt_status;
    pub fn trainrt_session_read_params(
        out: *mut f32,
        count: usize,
        session: *mut trainrt_session,
        name: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_session_write_params(
        session: *mut trainrt_session,
        name: *const c_char,
        values: *const f32,
        count: usize,
    ) -> trainrt_status;
    pub fn trainrt_session_set_metadata(
        session: *mut trainrt_session,
        key: *const c_char,
        value: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_session_get_metadata(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        found: *mut i32,
        session: *mut trainrt_session,
        key: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_session_metadata_count(
        out: *mut i64,
        session: *mut trainrt_session,
    ) -> trainrt_status;
    pub fn trainrt_session_metadata_key(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        session: *mut trainrt_session,
        index: i64,
    ) -> trainrt_status;

    pub fn trainrt_config_model_info(
        out: *mut trainrt_model_info,
        config: *const trainrt_config,
    ) -> trainrt_status;

    pub fn trainrt_prepare_bytes(
        out_train_tokens: *mut i64,
        out_val_tokens: *mut i64,
        text_path: *const c_char,
        out_dir: *const c_char,
        val_fraction: f64,
    ) -> trainrt_status;

    pub fn trainrt_prepare_options_init(options: *mut trainrt_prepare_options);
    pub fn trainrt_prepare_result_init(result: *mut trainrt_prepare_result);
    pub fn trainrt_prepare_text(
        out: *mut trainrt_prepare_result,
        inputs: *const *const c_char,
        n_inputs: usize,
        out_dir: *const c_char,
        options: *const trainrt_prepare_options,
    ) -> trainrt_status;

    pub fn trainrt_tokenizer_load(
        out: *mut *mut trainrt_tokenizer,
        path: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_tokenizer_destroy(tokenizer: *mut trainrt_tokenizer);
    pub fn trainrt_tokenizer_encode(
        ids: *mut i32,
        cap: usize,
        needed: *mut usize,
        tokenizer: *const trainrt_tokenizer,
        text: *const c_char,
        len: usize,
    ) -> trainrt_status;
    pub fn trainrt_tokenizer_decode(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        tokenizer: *const trainrt_tokenizer,
        ids: *const i32,
        n_ids: usize,
    ) -> trainrt_status;
    pub fn trainrt_tokenizer_vocab_size(
        out: *mut i32,
        tokenizer: *const trainrt_tokenizer,
    ) -> trainrt_status;
    pub fn trainrt_tokenizer_token_id(
        out: *mut i32,
        tokenizer: *const trainrt_tokenizer,
        token: *const c_char,
    ) -> trainrt_status;

    pub fn trainrt_chat_template_load(
        out: *mut *mut trainrt_chat_template,
        folder: *const c_char,
        name: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_chat_template_destroy(tmpl: *mut trainrt_chat_template);
    pub fn trainrt_chat_template_render(
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
        tmpl: *const trainrt_chat_template,
        conversation_json: *const c_char,
        add_generation_prompt: i32,
        vars_json: *const c_char,
    ) -> trainrt_status;
    pub fn trainrt_chat_template_stop_ids(
        ids: *mut i32,
        cap: usize,
        needed: *mut usize,
        tmpl: *const trainrt_chat_template,
        tokenizer: *const trainrt_tokenizer,
    ) -> trainrt_status;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    // Layouts as the C compiler lays them out on LP64 targets (checked against the C
    // compiler by bindings/rust/test.sh too).
    #[test]
    fn struct_sizes() {
        assert_eq!(size_of::<trainrt_step_result>(), 64);
        assert_eq!(size_of::<trainrt_eval_result>(), 40);
        assert_eq!(size_of::<trainrt_metrics>(), 128);
        // Appended fields (metrics v2 at 72, v3 at 96, v4 at 120) never move.
        let m = trainrt_metrics::default();
        let at = |field: *const f64| field as usize - &m as *const trainrt_metrics as usize;
        assert_eq!(at(&m.loss_scale), 88);
        assert_eq!(at(&m.model_flops_per_token), 96);
        assert_eq!(at(&m.mfu), 112);
        assert_eq!(
            &m.world_size as *const i32 as usize - &m as *const trainrt_metrics as usize,
            124
        );
        assert_eq!(size_of::<trainrt_progress>(), 96);
        assert_eq!(size_of::<trainrt_sample_options>(), 48); // v2: stop_ids at 32
        assert_eq!(size_of::<trainrt_model_info>(), 64); // v2: trainable_parameters at 56
        assert_eq!(size_of::<trainrt_prepare_options>(), 88); // v3: chat at 64
        assert_eq!(size_of::<trainrt_prepare_result>(), 88); // v3: examples at 64
        let o = trainrt_sample_options::default();
        let at = |f: usize| f - &o as *const trainrt_sample_options as usize;
        assert_eq!(at(&o.stop_ids as *const *const i32 as usize), 32);
        let po = trainrt_prepare_options::default();
        assert_eq!(
            &po.chat as *const i32 as usize - &po as *const trainrt_prepare_options as usize,
            64
        );
        let pr = trainrt_prepare_result::default();
        assert_eq!(
            &pr.examples as *const i64 as usize - &pr as *const trainrt_prepare_result as usize,
            64
        );
        assert_eq!(align_of::<trainrt_metrics>(), 8);
        assert_eq!(size_of::<trainrt_param_info>(), 72);
        let p = trainrt_param_info::default();
        let base = &p as *const trainrt_param_info as usize;
        assert_eq!(p.shape.as_ptr() as usize - base, 16);
        assert_eq!(&p.offset as *const i64 as usize - base, 56);
        assert_eq!(&p.trainable as *const i32 as usize - base, 68);
    }

    #[test]
    fn library_links_and_matches_header() {
        assert_eq!(unsafe { trainrt_abi_version() }, TRAINRT_ABI_VERSION);
        let mut a = trainrt_step_result {
            loss: 1.0,
            ..Default::default()
        };
        unsafe { trainrt_step_result_init(&mut a) };
        assert_eq!(a, trainrt_step_result::default());
        let mut m = trainrt_metrics::default();
        unsafe { trainrt_metrics_init(&mut m) };
        // An older library (metrics v1 72 bytes, v2 96) reports its own, smaller size.
        assert!(m.struct_size >= 72 && m.struct_size as usize <= size_of::<trainrt_metrics>());
        assert!(m.version >= 1 && m.version <= TRAINRT_METRICS_VERSION);
        let mut o = trainrt_sample_options {
            seed: 0,
            ..Default::default()
        };
        unsafe { trainrt_sample_options_init(&mut o) };
        assert_eq!(o, trainrt_sample_options::default());
        let mut p = trainrt_prepare_options {
            threads: 9,
            ..Default::default()
        };
        unsafe { trainrt_prepare_options_init(&mut p) };
        let d = trainrt_prepare_options::default();
        assert_eq!((p.struct_size, p.version), (d.struct_size, d.version));
        assert!(p.tokenizer.is_null() && p.jsonl_field.is_null() && p.progress.is_none());
        assert_eq!((p.val_fraction, p.threads, p.reserved), (0.0, 0, 0));
        assert!(p.progress_payload.is_null());
        let mut r = trainrt_prepare_result {
            documents: 9,
            ..Default::default()
        };
        unsafe { trainrt_prepare_result_init(&mut r) };
        assert_eq!(r, trainrt_prepare_result::default());
        let mut i = trainrt_param_info {
            numel: 9,
            layer: 3,
            ..Default::default()
        };
        unsafe { trainrt_param_info_init(&mut i) };
        assert_eq!(i, trainrt_param_info::default());
    }
}
