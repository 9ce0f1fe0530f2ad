// SPDX-License-Identifier: MIT
use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_int};

use brisk_sys as sys;

/// A failure's kind: a `brisk_status` other than `BRISK_OK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    NotFound,
    Io,
    BadFormat,
    Unsupported,
    OutOfMemory,
    ContextFull,
    BufferTooSmall,
    Cancelled,
    Checksum,
    Internal,
    /// A code newer than this binding.
    Other(i32),
}

impl Status {
    /// The status of a C code; `None` for `BRISK_OK`.
    pub fn from_code(code: i32) -> Option<Status> {
        Some(match code {
            sys::BRISK_OK => return None,
            sys::BRISK_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::BRISK_ERR_NOT_FOUND => Status::NotFound,
            sys::BRISK_ERR_IO => Status::Io,
            sys::BRISK_ERR_BAD_FORMAT => Status::BadFormat,
            sys::BRISK_ERR_UNSUPPORTED => Status::Unsupported,
            sys::BRISK_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::BRISK_ERR_CONTEXT_FULL => Status::ContextFull,
            sys::BRISK_ERR_BUFFER_TOO_SMALL => Status::BufferTooSmall,
            sys::BRISK_ERR_CANCELLED => Status::Cancelled,
            sys::BRISK_ERR_CHECKSUM => Status::Checksum,
            sys::BRISK_ERR_INTERNAL => Status::Internal,
            other => Status::Other(other),
        })
    }

    /// The C code.
    pub fn code(self) -> i32 {
        match self {
            Status::InvalidArgument => sys::BRISK_ERR_INVALID_ARGUMENT,
            Status::NotFound => sys::BRISK_ERR_NOT_FOUND,
            Status::Io => sys::BRISK_ERR_IO,
            Status::BadFormat => sys::BRISK_ERR_BAD_FORMAT,
            Status::Unsupported => sys::BRISK_ERR_UNSUPPORTED,
            Status::OutOfMemory => sys::BRISK_ERR_OUT_OF_MEMORY,
            Status::ContextFull => sys::BRISK_ERR_CONTEXT_FULL,
            Status::BufferTooSmall => sys::BRISK_ERR_BUFFER_TOO_SMALL,
            Status::Cancelled => sys::BRISK_ERR_CANCELLED,
            Status::Checksum => sys::BRISK_ERR_CHECKSUM,
            Status::Internal => sys::BRISK_ERR_INTERNAL,
            Status::Other(c) => c,
        }
    }

    /// The C name, e.g. "BRISK_ERR_IO".
    pub fn name(self) -> &'static str {
        // brisk_status_name returns static strings.
        unsafe { CStr::from_ptr(sys::brisk_status_name(self.code())) }.to_str().unwrap_or("BRISK_ERR_UNKNOWN")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed brisk call: its status and brisk_last_error()'s text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "brisk: {}", self.status)
        } else {
            write!(f, "brisk: {} ({})", self.message, self.status)
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Turns a status into a Result, reading the thread-local message at once
/// (Rust threads do not migrate, so this is the thread of the call).
pub(crate) fn check(code: c_int) -> Result<()> {
    match Status::from_code(code) {
        None => Ok(()),
        Some(status) => {
            let msg = unsafe { CStr::from_ptr(sys::brisk_last_error()) }.to_string_lossy().into_owned();
            Err(Error { status, message: msg })
        }
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArgument, message)
}

/// Calls a (buf, cap, needed) function that writes NUL-terminated text and
/// returns the bytes without the NUL, growing the buffer when asked.
pub(crate) fn bytes_out(mut f: impl FnMut(*mut c_char, usize, *mut usize) -> c_int) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    for attempt in 0.. {
        let mut needed = 0usize;
        let r = check(f(buf.as_mut_ptr() as *mut c_char, buf.len(), &mut needed));
        match r {
            Ok(()) => {
                buf.truncate(needed.saturating_sub(1));
                return Ok(buf);
            }
            Err(e) if e.status == Status::BufferTooSmall && needed > buf.len() && attempt < 4 => {
                buf = vec![0u8; needed];
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!()
}

pub(crate) fn text_out(f: impl FnMut(*mut c_char, usize, *mut usize) -> c_int) -> Result<String> {
    let bytes = bytes_out(f)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Like bytes_out, for arrays of `T` (token ids, logits).
pub(crate) fn array_out<T: Copy + Default>(
    guess: usize,
    mut f: impl FnMut(*mut T, usize, *mut usize) -> c_int,
) -> Result<Vec<T>> {
    let mut buf = vec![T::default(); guess.max(1)];
    for attempt in 0.. {
        let mut needed = 0usize;
        match check(f(buf.as_mut_ptr(), buf.len(), &mut needed)) {
            Ok(()) => {
                buf.truncate(needed);
                return Ok(buf);
            }
            Err(e) if e.status == Status::BufferTooSmall && needed > buf.len() && attempt < 4 => {
                buf = vec![T::default(); needed];
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!()
}
