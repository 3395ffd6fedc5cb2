use crate::error::{check, Error, Result, Status};
use std::ffi::CString;
use std::os::raw::c_char;
use std::path::Path;

pub(crate) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("string contains a NUL byte: {s:?}"),
        )
    })
}

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
    CString::new(bytes).map_err(|_| {
        Error::new(
            Status::InvalidArgument,
            format!("path contains a NUL byte: {p:?}"),
        )
    })
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
