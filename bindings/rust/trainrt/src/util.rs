use crate::error::{check, Error, Result, Status};
use std::ffi::CString;
use std::os::raw::c_char;
use std::path::Path;

/// `s` as a C string. A NUL inside would end it there, so the library would act on a prefix of
/// what was given: refused as an InvalidArgument error (as the C++ wrapper and the other
/// bindings do), never a panic.
pub(crate) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|e| nul_error("a string argument", e.nul_position()))
}

fn nul_error(what: &str, at: usize) -> Error {
    Error::new(
        Status::InvalidArgument,
        format!(
            "{what} holds a NUL character at byte {at} (C strings end there, so the library \
             would see only what comes before it)"
        ),
    )
}

/// A path as a C string; a NUL inside is refused as `cstring` refuses it.
pub(crate) fn cpath(p: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        p.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = p
        .to_str()
        .ok_or_else(|| Error::new(Status::InvalidArgument, format!("path is not UTF-8: {p:?}")))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|e| nul_error("a path", e.nul_position()))
}

/// Runs a `(buf, cap, &needed)` call: a first try into a small buffer, a second with the
/// size the first reported when it did not fit.
pub(crate) fn read_string(
    call: impl FnMut(*mut c_char, usize, *mut usize) -> i32,
) -> Result<String> {
    String::from_utf8(read_bytes(256, call)?).map_err(|e| {
        Error::new(
            Status::Format,
            format!("library returned non-UTF-8 text: {e}"),
        )
    })
}

/// [`read_string`]'s loop for bytes that may hold NUL (the length is `*needed`, not the
/// NUL): a first try into `first_cap` bytes, a second with `needed + 1` when it did not fit.
pub(crate) fn read_bytes(
    first_cap: usize,
    mut call: impl FnMut(*mut c_char, usize, *mut usize) -> i32,
) -> Result<Vec<u8>> {
    let mut buf: Vec<u8> = vec![0; first_cap.max(1)];
    loop {
        let mut needed = 0usize;
        check(call(buf.as_mut_ptr().cast(), buf.len(), &mut needed))?;
        // At most cap - 1 bytes plus a NUL are copied: it fits when needed < cap.
        if needed < buf.len() {
            buf.truncate(needed);
            return Ok(buf);
        }
        buf = vec![0; needed + 1];
    }
}
