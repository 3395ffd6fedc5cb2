use crate::error::{check, Result};
use crate::tokenizer::Tokenizer;
use crate::util::{cpath, cstring, read_string};
use std::path::Path;
use std::ptr;
use trainrt_sys as sys;

/// A model folder's chat template (its `chat_template.jinja`, else `tokenizer_config.json`'s
/// `"chat_template"`), rendered as Hugging Face transformers' `apply_chat_template` renders
/// it. A construct the engine does not support is refused at load ([`crate::Status::Unsupported`]
/// naming it and its line).
///
/// `Send + Sync`: a loaded template is immutable and the C API lets several threads render
/// with one at once. Freed on drop.
pub struct ChatTemplate {
    raw: *mut sys::trainrt_chat_template,
}

// SAFETY: a trainrt_chat_template is immutable once loaded; render and stop_ids take a const
// handle and are safe from several threads at once (trainrt.h). Destroy runs in Drop, when no
// reference (hence no call) remains.
unsafe impl Send for ChatTemplate {}
unsafe impl Sync for ChatTemplate {}

impl ChatTemplate {
    /// The folder's template; `name`: one of its named templates, `None` = `"default"` (or
    /// the only one).
    pub fn load(folder: impl AsRef<Path>, name: Option<&str>) -> Result<ChatTemplate> {
        let f = cpath(folder.as_ref())?;
        let n = name.map(cstring).transpose()?;
        let mut raw = ptr::null_mut();
        // SAFETY: valid C strings (or NULL); out pointer to a local.
        check(unsafe {
            sys::trainrt_chat_template_load(
                &mut raw,
                f.as_ptr(),
                n.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            )
        })?;
        Ok(ChatTemplate { raw })
    }

    /// The text of a conversation: `conversation_json` is `{"messages": [...], "tools":
    /// [...]?}` or a list of messages; `add_generation_prompt` appends what opens the
    /// assistant's reply; `vars_json`, a JSON object of more template variables. A template
    /// that raises is [`crate::Status::InvalidArgument`] with its message.
    pub fn render(
        &self,
        conversation_json: &str,
        add_generation_prompt: bool,
        vars_json: Option<&str>,
    ) -> Result<String> {
        let c = cstring(conversation_json)?;
        let v = vars_json.map(cstring).transpose()?;
        let vp = v.as_ref().map_or(ptr::null(), |v| v.as_ptr());
        // SAFETY: valid C strings; live handle, shared use allowed; buffers from read_string.
        read_string(|buf, cap, needed| unsafe {
            sys::trainrt_chat_template_render(
                buf,
                cap,
                needed,
                self.raw,
                c.as_ptr(),
                i32::from(add_generation_prompt),
                vp,
            )
        })
    }

    /// The ids a reply ends with (`generation_config.json`'s `eos_token_id`, else
    /// `tokenizer_config.json`'s `eos_token`), for [`crate::Session::generate`].
    /// `tokenizer`: the folder's.
    pub fn stop_ids(&self, tokenizer: &Tokenizer) -> Result<Vec<i32>> {
        let mut needed = 0usize;
        // SAFETY: size query (NULL, 0); live handles.
        check(unsafe {
            sys::trainrt_chat_template_stop_ids(
                ptr::null_mut(),
                0,
                &mut needed,
                self.raw,
                tokenizer.as_raw(),
            )
        })?;
        loop {
            let mut ids = vec![0i32; needed];
            let cap = ids.len();
            let ip = if cap == 0 {
                ptr::null_mut()
            } else {
                ids.as_mut_ptr()
            };
            // SAFETY: ids holds cap slots; live handles.
            check(unsafe {
                sys::trainrt_chat_template_stop_ids(
                    ip,
                    cap,
                    &mut needed,
                    self.raw,
                    tokenizer.as_raw(),
                )
            })?;
            if needed <= cap {
                ids.truncate(needed);
                return Ok(ids);
            }
        }
    }

    /// The raw handle (still owned by this ChatTemplate).
    pub fn as_raw(&self) -> *const sys::trainrt_chat_template {
        self.raw
    }
}

impl Drop for ChatTemplate {
    fn drop(&mut self) {
        // SAFETY: we own the handle; no borrow (hence no call) outlives self.
        unsafe { sys::trainrt_chat_template_destroy(self.raw) }
    }
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("raw", &self.raw)
            .finish()
    }
}
