// SPDX-License-Identifier: MIT
// Callbacks: a Rust closure goes to C as user_data (a pointer to a slot the
// binding owns) plus an `extern "C"` trampoline. A panic never unwinds into
// C++: the trampoline catches it, asks brisk to stop, and the binding
// resumes the panic once the C call has returned.
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use brisk_sys as sys;

use crate::model::LogLevel;
use crate::Token;

pub(crate) type PanicPayload = Box<dyn Any + Send + 'static>;
pub(crate) type PanicSink = Cell<Option<PanicPayload>>;

fn record(sink: &PanicSink, p: PanicPayload) {
    let first = sink.take().unwrap_or(p);
    sink.set(Some(first));
}

/// Re-raises a panic a callback had during the last C call.
pub(crate) fn rethrow(sink: &PanicSink) {
    if let Some(p) = sink.take() {
        resume_unwind(p);
    }
}

// ---- token callbacks ---------------------------------------------------------

/// Lets an engine kill a sequence's callback without knowing its type.
pub(crate) trait ErasedSlot {
    /// Drops the closure now (or, if it is running, as soon as it returns)
    /// and makes every later call a "stop".
    fn kill(&self);
}

pub(crate) struct TokenSlot<F> {
    f: UnsafeCell<Option<F>>,
    running: Cell<bool>,
    dead: Cell<bool>,
    sink: *const PanicSink,
}

impl<F: FnMut(Option<Token>, &str) -> bool> TokenSlot<F> {
    /// sink must outlive every call of the callback.
    pub(crate) fn new(f: F, sink: *const PanicSink) -> Self {
        TokenSlot { f: UnsafeCell::new(Some(f)), running: Cell::new(false), dead: Cell::new(false), sink }
    }

    /// The callback and user_data for brisk_generate_options.
    pub(crate) fn install(slot: *mut Self, o: &mut sys::brisk_generate_options) {
        o.token_fn = Some(token_trampoline::<F>);
        o.token_user_data = slot as *mut c_void;
    }
}

impl<F> ErasedSlot for TokenSlot<F> {
    fn kill(&self) {
        self.dead.set(true);
        if !self.running.get() {
            // Not inside the closure: no reference to it is live.
            unsafe { *self.f.get() = None };
        }
    }
}

unsafe extern "C" fn token_trampoline<F: FnMut(Option<Token>, &str) -> bool>(
    user_data: *mut c_void,
    token: i32,
    text: *const c_char,
    len: usize,
) -> c_int {
    let slot = &*(user_data as *const TokenSlot<F>);
    if slot.dead.get() {
        return 1;
    }
    let bytes: &[u8] =
        if len == 0 || text.is_null() { &[] } else { std::slice::from_raw_parts(text as *const u8, len) };
    // brisk hands out complete UTF-8 (invalid bytes already as U+FFFD);
    // lossy decoding borrows in that case and guards against the rest.
    let text = String::from_utf8_lossy(bytes);
    let token = if token >= 0 { Some(token) } else { None };
    slot.running.set(true);
    let result = catch_unwind(AssertUnwindSafe(|| match (*slot.f.get()).as_mut() {
        Some(f) => f(token, &text),
        None => false,
    }));
    slot.running.set(false);
    let stop = match result {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(p) => {
            slot.dead.set(true);
            record(&*slot.sink, p);
            1
        }
    };
    if slot.dead.get() {
        // Killed from inside its own call, or it panicked: drop it now that
        // it has returned (a panic while dropping is kept too).
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| *slot.f.get() = None)) {
            record(&*slot.sink, p);
        }
    }
    stop
}

// ---- abort callbacks -----------------------------------------------------------

/// An abort callback: polled while brisk computes; `true` cancels.
pub type AbortFn = Box<dyn FnMut() -> bool + Send + 'static>;

pub(crate) struct AbortSlot {
    f: AbortFn,
    pub(crate) panic: PanicSink,
}

impl AbortSlot {
    /// A slot on the heap, freed with `free`.
    pub(crate) fn into_raw(f: AbortFn) -> *mut AbortSlot {
        Box::into_raw(Box::new(AbortSlot { f, panic: Cell::new(None) }))
    }

    pub(crate) unsafe fn free(slot: *mut AbortSlot) {
        if !slot.is_null() {
            drop(Box::from_raw(slot));
        }
    }

    pub(crate) fn trampoline() -> sys::brisk_abort_fn {
        Some(abort_trampoline)
    }

    /// Re-raises a panic of the callback (no-op for a null slot).
    pub(crate) unsafe fn rethrow(slot: *const AbortSlot) {
        if !slot.is_null() {
            rethrow(&(*slot).panic);
        }
    }
}

unsafe extern "C" fn abort_trampoline(user_data: *mut c_void) -> c_int {
    let slot = user_data as *mut AbortSlot;
    match catch_unwind(AssertUnwindSafe(|| ((*slot).f)())) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(p) => {
            record(&(*slot).panic, p);
            1
        }
    }
}

// ---- log callbacks ---------------------------------------------------------------

/// A log callback: receives messages from loading a model.
pub type LogFn = Box<dyn Fn(LogLevel, &str) + Send + Sync + 'static>;

pub(crate) struct LogSlot {
    f: LogFn,
    pub(crate) panic: Mutex<Option<PanicPayload>>,
}

impl LogSlot {
    pub(crate) fn into_raw(f: LogFn) -> *mut LogSlot {
        Box::into_raw(Box::new(LogSlot { f, panic: Mutex::new(None) }))
    }

    pub(crate) unsafe fn free(slot: *mut LogSlot) {
        if !slot.is_null() {
            drop(Box::from_raw(slot));
        }
    }

    pub(crate) fn trampoline() -> sys::brisk_log_fn {
        Some(log_trampoline)
    }

    pub(crate) unsafe fn rethrow(slot: *const LogSlot) {
        if slot.is_null() {
            return;
        }
        let p = match (*slot).panic.lock() {
            Ok(mut g) => g.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(p) = p {
            resume_unwind(p);
        }
    }
}

unsafe extern "C" fn log_trampoline(user_data: *mut c_void, level: sys::brisk_log_level, message: *const c_char) {
    let slot = &*(user_data as *const LogSlot);
    let msg = if message.is_null() {
        std::borrow::Cow::Borrowed("")
    } else {
        std::ffi::CStr::from_ptr(message).to_string_lossy()
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| (slot.f)(LogLevel::from_code(level), &msg))) {
        if let Ok(mut g) = slot.panic.lock() {
            if g.is_none() {
                *g = Some(p);
            }
        }
    }
}
