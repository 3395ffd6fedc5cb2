use std::ffi::CStr;
use std::fmt;
use trainrt_sys as sys;

/// A libtrainrt status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    Ok,
    /// `train()` ended early on request (not an error).
    Stopped,
    InvalidArgument,
    Config,
    Io,
    Format,
    OutOfMemory,
    Device,
    Unsupported,
    Busy,
    Cancelled,
    VersionMismatch,
    Internal,
    DeviceLost,
    NonFinite,
    /// A code this binding does not know (a newer library).
    Other(i32),
}

impl Status {
    pub fn from_code(code: i32) -> Status {
        match code {
            sys::TRAINRT_OK => Status::Ok,
            sys::TRAINRT_STOPPED => Status::Stopped,
            sys::TRAINRT_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::TRAINRT_ERR_CONFIG => Status::Config,
            sys::TRAINRT_ERR_IO => Status::Io,
            sys::TRAINRT_ERR_FORMAT => Status::Format,
            sys::TRAINRT_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::TRAINRT_ERR_DEVICE => Status::Device,
            sys::TRAINRT_ERR_UNSUPPORTED => Status::Unsupported,
            sys::TRAINRT_ERR_BUSY => Status::Busy,
            sys::TRAINRT_ERR_CANCELLED => Status::Cancelled,
            sys::TRAINRT_ERR_VERSION_MISMATCH => Status::VersionMismatch,
            sys::TRAINRT_ERR_INTERNAL => Status::Internal,
            sys::TRAINRT_ERR_DEVICE_LOST => Status::DeviceLost,
            sys::TRAINRT_ERR_NON_FINITE => Status::NonFinite,
            other => Status::Other(other),
        }
    }

    /// The C code (`TRAINRT_*`).
    pub fn code(self) -> i32 {
        match self {
            Status::Ok => sys::TRAINRT_OK,
            Status::Stopped => sys::TRAINRT_STOPPED,
            Status::InvalidArgument => sys::TRAINRT_ERR_INVALID_ARGUMENT,
            Status::Config => sys::TRAINRT_ERR_CONFIG,
            Status::Io => sys::TRAINRT_ERR_IO,
            Status::Format => sys::TRAINRT_ERR_FORMAT,
            Status::OutOfMemory => sys::TRAINRT_ERR_OUT_OF_MEMORY,
            Status::Device => sys::TRAINRT_ERR_DEVICE,
            Status::Unsupported => sys::TRAINRT_ERR_UNSUPPORTED,
            Status::Busy => sys::TRAINRT_ERR_BUSY,
            Status::Cancelled => sys::TRAINRT_ERR_CANCELLED,
            Status::VersionMismatch => sys::TRAINRT_ERR_VERSION_MISMATCH,
            Status::Internal => sys::TRAINRT_ERR_INTERNAL,
            Status::DeviceLost => sys::TRAINRT_ERR_DEVICE_LOST,
            Status::NonFinite => sys::TRAINRT_ERR_NON_FINITE,
            Status::Other(code) => code,
        }
    }

    /// The library's static English name of the code ("invalid argument", ...).
    pub fn name(self) -> &'static str {
        // SAFETY: returns a static NUL-terminated string, never NULL.
        unsafe { CStr::from_ptr(sys::trainrt_status_string(self.code())) }
            .to_str()
            .unwrap_or("?")
    }

    pub fn is_error(self) -> bool {
        self.code() < 0
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed libtrainrt call: its status and `trainrt_last_error_message()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// Error for `code`, with this thread's last error message (read at once).
    pub(crate) fn last(code: i32) -> Error {
        // SAFETY: never NULL; valid until the next libtrainrt call on this thread.
        let message = unsafe { CStr::from_ptr(sys::trainrt_last_error_message()) }
            .to_string_lossy()
            .into_owned();
        Error {
            status: Status::from_code(code),
            message,
        }
    }

    pub fn status(&self) -> Status {
        self.status
    }

    /// The C code (negative).
    pub fn code(&self) -> i32 {
        self.status.code()
    }

    /// The status name ("config", "I/O", ...).
    pub fn name(&self) -> &'static str {
        self.status.name()
    }

    /// What failed, where, and what to do (libtrainrt's message).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.status.name(),
            self.status.code(),
            self.message
        )
    }
}

impl std::error::Error for Error {}

/// `Ok(code)` for non-negative codes, else the error with its message.
#[inline]
pub(crate) fn check(code: i32) -> Result<i32> {
    if code < 0 {
        Err(Error::last(code))
    } else {
        Ok(code)
    }
}
