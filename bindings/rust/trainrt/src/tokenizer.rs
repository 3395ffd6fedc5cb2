use crate::callbacks::{prepare_progress_trampoline, PrepareProgressState};
use crate::error::{check, Error, Result, Status};
use crate::util::{cpath, cstring, read_bytes};
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr;
use trainrt_sys as sys;

/// A Hugging Face tokenizer of the byte-level BPE family (a `tokenizer.json`: GPT-2, Llama 3
/// and the like), as libtrainrt reproduces it exactly, or a SentencePiece model (a
/// `tokenizer.model`: Llama 2 style).
///
/// `Send + Sync`: a loaded tokenizer is immutable and the C API lets several threads encode
/// and decode with one at once, so share it by `&Tokenizer` or `Arc<Tokenizer>`. Freed on drop.
pub struct Tokenizer {
    raw: *mut sys::trainrt_tokenizer,
    vocab_size: i32,
}

// SAFETY: a trainrt_tokenizer is immutable once loaded; every call on it takes a const handle
// and is documented as safe from several threads at once (docs/C_API.md, "Threads"). Destroy
// runs in Drop, when no reference (hence no call) remains.
unsafe impl Send for Tokenizer {}
unsafe impl Sync for Tokenizer {}

impl Tokenizer {
    /// Loads a `tokenizer.json` or `tokenizer.model`, or the one in a folder (a Hugging Face
    /// model folder). A file libtrainrt cannot reproduce exactly is refused with
    /// [`Status::Unsupported`].
    pub fn load(path: impl AsRef<Path>) -> Result<Tokenizer> {
        let p = cpath(path.as_ref())?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid C string; out pointer to a local.
        check(unsafe { sys::trainrt_tokenizer_load(&mut raw, p.as_ptr()) })?;
        let mut tok = Tokenizer { raw, vocab_size: 0 };
        let mut v = 0i32;
        // SAFETY: live handle (dropped, hence destroyed, on error).
        check(unsafe { sys::trainrt_tokenizer_vocab_size(&mut v, tok.raw) })?;
        tok.vocab_size = v;
        Ok(tok)
    }

    /// The ids of `text`. No special token is added; the text of an added token
    /// (`"<|endoftext|>"`) becomes its id.
    pub fn encode(&self, text: &str) -> Result<Vec<i32>> {
        self.encode_bytes(text.as_bytes())
    }

    /// [`encode`](Self::encode) of raw bytes, which must be UTF-8: anything else is
    /// [`Status::InvalidArgument`] naming the byte.
    pub fn encode_bytes(&self, text: &[u8]) -> Result<Vec<i32>> {
        // Every token covers at least one byte, so text.len() ids hold the ids of any text:
        // one call, a second only if that ever changed.
        let mut cap = text.len();
        loop {
            let mut ids = vec![0i32; cap];
            let mut needed = 0usize;
            let ip = if cap == 0 {
                ptr::null_mut()
            } else {
                ids.as_mut_ptr()
            };
            // SAFETY: ids has cap slots (or is NULL with cap 0); text is valid for its length;
            // the handle is live and may be used by several threads at once.
            check(unsafe {
                sys::trainrt_tokenizer_encode(
                    ip,
                    cap,
                    &mut needed,
                    self.raw,
                    text.as_ptr().cast::<c_char>(),
                    text.len(),
                )
            })?;
            if needed <= cap {
                ids.truncate(needed);
                ids.shrink_to_fit();
                return Ok(ids);
            }
            cap = needed;
        }
    }

    /// The bytes of `ids` (each in `0..vocab_size()`). They may hold NUL (byte tokens) and, for
    /// a cut-off sequence, end inside a UTF-8 character.
    pub fn decode_bytes(&self, ids: &[i32]) -> Result<Vec<u8>> {
        // SAFETY: buffer from read_bytes; ids valid for its length; shared use is allowed.
        read_bytes(ids.len() * 4 + 16, |buf, cap, needed| unsafe {
            sys::trainrt_tokenizer_decode(buf, cap, needed, self.raw, ids.as_ptr(), ids.len())
        })
    }

    /// The text of `ids`; bytes that are not UTF-8 (a sequence cut inside a character) are
    /// [`Status::Format`]: use [`decode_bytes`](Self::decode_bytes) or
    /// [`decode_lossy`](Self::decode_lossy) for those.
    pub fn decode(&self, ids: &[i32]) -> Result<String> {
        String::from_utf8(self.decode_bytes(ids)?).map_err(|e| {
            Error::new(
                Status::Format,
                format!("the decoded bytes are not UTF-8 ({e}); use decode_bytes or decode_lossy"),
            )
        })
    }

    /// The text of `ids`, with U+FFFD for bytes that are not UTF-8.
    pub fn decode_lossy(&self, ids: &[i32]) -> Result<String> {
        let bytes = self.decode_bytes(ids)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The largest id plus one (added tokens included): the smallest `model.vocab_size` that
    /// can train on this tokenizer's shards.
    pub fn vocab_size(&self) -> i32 {
        self.vocab_size
    }

    /// The id of a token given by its text: an added token (`"<|endoftext|>"`) or a vocabulary
    /// entry in its byte-level spelling (`"Ġthe"`); `None` when there is none.
    pub fn token_id(&self, token: &str) -> Result<Option<i32>> {
        let t = cstring(token)?;
        let mut id = -1i32;
        // SAFETY: valid C string; live handle, shared use allowed.
        check(unsafe { sys::trainrt_tokenizer_token_id(&mut id, self.raw, t.as_ptr()) })?;
        Ok(if id < 0 { None } else { Some(id) })
    }

    /// The raw handle (still owned by this Tokenizer).
    pub fn as_raw(&self) -> *const sys::trainrt_tokenizer {
        self.raw
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        // SAFETY: we own the handle; no borrow (hence no call) outlives self.
        unsafe { sys::trainrt_tokenizer_destroy(self.raw) }
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("raw", &self.raw)
            .field("vocab_size", &self.vocab_size)
            .finish()
    }
}

/// Options of [`prepare_text`]. `tokenizer` is required; the rest default to text inputs,
/// no validation split and all cores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrepareOptions {
    /// A `tokenizer.json` or `tokenizer.model`, or a model folder. Its end-of-text token
    /// begins every document: `eos_token` of the `tokenizer_config.json` beside it, else a
    /// SentencePiece model's own, else `<|endoftext|>`, `<|end_of_text|>` or `</s>`.
    pub tokenizer: PathBuf,
    /// `None`: each input file is a document. `Some(field)`: the inputs are JSON lines and
    /// each line's string `field` is a document.
    pub jsonl_field: Option<String>,
    /// The share of the input bytes, at the end, that goes to val.bin: `[0, 1)`.
    pub val_fraction: f64,
    /// 0 = all cores.
    pub threads: i32,
    /// 0: one `train.bin` and `val.bin`. N: `train_000000.bin`, `train_000001.bin`, ... (and
    /// `val_*.bin`) of at most N tokens each.
    pub shard_tokens: i64,
    /// Chat data: `tokenizer` is a model folder with a chat template; each input line is a
    /// conversation rendered with it, and `mask_train.bin` / `mask_val.bin` hold each
    /// token's loss mask. `jsonl_field` and `shard_tokens` must be unset.
    pub chat: bool,
    /// Which tokens of a chat example are targets.
    pub loss_mask: LossMask,
    /// One of the folder's named templates; `None` = `"default"`.
    pub chat_template: Option<String>,
    /// A JSON object of more template variables.
    pub template_vars: Option<String>,
}

/// Which tokens of a chat example are targets (`TRAINRT_LOSS_MASK_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(i32)]
pub enum LossMask {
    /// Assistant for `"messages"`, completion for prompt-completion.
    #[default]
    Default = sys::TRAINRT_LOSS_MASK_DEFAULT,
    /// Every assistant turn, its end-of-turn token included.
    Assistant = sys::TRAINRT_LOSS_MASK_ASSISTANT,
    /// The completion; of `"messages"`, the last assistant turn.
    Completion = sys::TRAINRT_LOSS_MASK_COMPLETION,
    /// Every token but the first.
    All = sys::TRAINRT_LOSS_MASK_ALL,
}

impl PrepareOptions {
    /// Text inputs, no validation split, all cores.
    pub fn new(tokenizer: impl Into<PathBuf>) -> PrepareOptions {
        PrepareOptions {
            tokenizer: tokenizer.into(),
            ..Default::default()
        }
    }
}

/// What [`prepare_text`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareResult {
    pub documents: i64,
    pub train_tokens: i64,
    pub val_tokens: i64,
    /// Input bytes tokenized.
    pub bytes: i64,
    /// 2 or 4: the shards' id width (uint16 when every id fits, else uint32).
    pub token_bytes: i32,
    /// The tokenizer's: the smallest `model.vocab_size` for these shards.
    pub vocab_size: i32,
    /// The end-of-text token that begins each document.
    pub eos_id: i32,
    /// Shard files written per split (1 without `shard_tokens`).
    pub train_shards: i32,
    pub val_shards: i32,
    /// Chat data (`documents` then counts the conversations): examples written (a
    /// conversation in the per-turn form gives several).
    pub examples: i64,
    /// Chat data: the tokens of both splits whose loss counts.
    pub target_tokens: i64,
    /// Chat data: conversations written one example per assistant turn.
    pub per_turn: i64,
}

/// Tokenizes `inputs` (read in order) with a Hugging Face tokenizer into llm.c shards,
/// `out_dir/train.bin` and `out_dir/val.bin` (created complete or not at all).
pub fn prepare_text<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: impl AsRef<Path>,
    options: &PrepareOptions,
) -> Result<PrepareResult> {
    prepare(inputs, out_dir.as_ref(), options, None)
}

/// [`prepare_text`] calling `progress(done, total)` (input bytes) now and then, on this
/// thread; `progress` returns `true` to continue, `false` to stop, which fails with
/// [`Status::Cancelled`] and writes no shard. A panic in `progress` stops the work too and is
/// re-raised here once the library has returned (it never unwinds through C).
pub fn prepare_text_with<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: impl AsRef<Path>,
    options: &PrepareOptions,
    mut progress: impl FnMut(i64, i64) -> bool,
) -> Result<PrepareResult> {
    prepare(inputs, out_dir.as_ref(), options, Some(&mut progress))
}

fn prepare<P: AsRef<Path>>(
    inputs: &[P],
    out_dir: &Path,
    options: &PrepareOptions,
    progress: Option<&mut dyn FnMut(i64, i64) -> bool>,
) -> Result<PrepareResult> {
    let paths = inputs
        .iter()
        .map(|p| cpath(p.as_ref()))
        .collect::<Result<Vec<CString>>>()?;
    let ptrs: Vec<*const c_char> = paths.iter().map(|p| p.as_ptr()).collect();
    let out = cpath(out_dir)?;
    let tokenizer = cpath(&options.tokenizer)?;
    let field = options.jsonl_field.as_deref().map(cstring).transpose()?;
    let name = options.chat_template.as_deref().map(cstring).transpose()?;
    let vars = options.template_vars.as_deref().map(cstring).transpose()?;
    let mut state = progress.map(|f| PrepareProgressState { f, panic: None });
    let (cb, payload): (sys::trainrt_prepare_progress_fn, *mut c_void) = match &mut state {
        Some(s) => (
            Some(prepare_progress_trampoline),
            s as *mut PrepareProgressState<'_> as *mut c_void,
        ),
        None => (None, ptr::null_mut()),
    };
    let o = sys::trainrt_prepare_options {
        tokenizer: tokenizer.as_ptr(),
        jsonl_field: field.as_ref().map_or(ptr::null(), |f| f.as_ptr()),
        val_fraction: options.val_fraction,
        threads: options.threads,
        shard_tokens: options.shard_tokens,
        chat: i32::from(options.chat),
        loss_mask: options.loss_mask as i32,
        chat_template: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
        template_vars: vars.as_ref().map_or(ptr::null(), |v| v.as_ptr()),
        progress: cb,
        progress_payload: payload,
        ..Default::default()
    };
    let mut r = sys::trainrt_prepare_result::default();
    // SAFETY: every C string and the pointer array outlive the call; state lives on this
    // stack frame for the whole call and C calls the trampoline only during it.
    let code =
        unsafe { sys::trainrt_prepare_text(&mut r, ptrs.as_ptr(), ptrs.len(), out.as_ptr(), &o) };
    if let Some(panic) = state.and_then(|s| s.panic) {
        std::panic::resume_unwind(panic);
    }
    check(code)?;
    Ok(PrepareResult {
        documents: r.documents,
        train_tokens: r.train_tokens,
        val_tokens: r.val_tokens,
        bytes: r.bytes,
        token_bytes: r.token_bytes,
        vocab_size: r.vocab_size,
        eos_id: r.eos_id,
        train_shards: r.train_shards,
        val_shards: r.val_shards,
        examples: r.examples,
        target_tokens: r.target_tokens,
        per_turn: r.per_turn,
    })
}
