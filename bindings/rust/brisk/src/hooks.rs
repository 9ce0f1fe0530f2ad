// SPDX-License-Identifier: MIT
// Callbacks of the toolchain calls (convert, verify, pack, quantize,
// calibrate, perplexity, compare) and of doctor. brisk calls them on the
// calling thread, inside the call, so they may borrow local state and need
// not be Send.
// Each goes to C as an `extern "C"` trampoline with a pointer to a `Run`
// on the caller's stack; a panic is caught there (it never unwinds into
// C++), the call is asked to stop, and the panic resumes once it returns.
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use brisk_sys as sys;

use crate::callback::PanicPayload;
use crate::error::{check, Result};
use crate::model::LogLevel;
use crate::Type;

/// One progress report of a long-running call: `done` of `total` units
/// (bytes, tensors, tokens, chunks or prompts, depending on the stage).
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// "convert", "verify", "pack", "unpack", "quantize", "calibrate",
    /// "sensitivity", "ppl", "compare" or "doctor".
    pub stage: &'a str,
    pub done: u64,
    pub total: u64,
    /// What is being worked on, e.g. a tensor's name; may be empty.
    pub detail: &'a str,
}

/// One difference found by [`verify`](crate::verify): where (a tensor,
/// "metadata", "manifest", a bundle segment, ...) and what differs.
#[derive(Clone, Copy, Debug)]
pub struct Mismatch<'a> {
    pub location: &'a str,
    pub detail: &'a str,
}

/// One tensor of [`quantize`](crate::quantize)'s output, as it is written.
#[derive(Clone, Copy, Debug)]
pub struct TensorInfo<'a> {
    pub name: &'a str,
    /// Input and output types as GGUF type ids (see [`TensorInfo::src`]).
    pub src_type: i32,
    pub dst_type: i32,
    pub n_elements: u64,
    pub bytes: u64,
    /// How the type was chosen: "default", "mixture rule", "override
    /// REGEX", "recipe", "fallback: ...".
    pub why: &'a str,
}

impl TensorInfo<'_> {
    /// The input type, if this binding knows it.
    pub fn src(&self) -> Option<Type> {
        Type::from_code(self.src_type)
    }
    /// The output type, if this binding knows it.
    pub fn dst(&self) -> Option<Type> {
        Type::from_code(self.dst_type)
    }
}

type ProgressFn<'a> = Box<dyn FnMut(&Progress<'_>) + 'a>;
type CancelFn<'a> = Box<dyn FnMut() -> bool + 'a>;
type ToolLogFn<'a> = Box<dyn FnMut(LogLevel, &str) + 'a>;
type MismatchFn<'a> = Box<dyn FnMut(&Mismatch<'_>) + 'a>;
type TensorFn<'a> = Box<dyn FnMut(&TensorInfo<'_>) + 'a>;

/// The callbacks of one toolchain call, all optional; build them with the
/// `on_*` methods. A call uses those that apply to it (`on_mismatch` is for
/// [`verify`](crate::verify), `on_tensor` for [`quantize`](crate::quantize)).
///
/// ```no_run
/// use std::sync::atomic::{AtomicBool, Ordering};
/// # fn main() -> brisk::Result<()> {
/// let stop = AtomicBool::new(false); // e.g. set by a signal handler
/// let hooks = brisk::Hooks::new()
///     .on_progress(|p| eprintln!("{} {}/{}", p.stage, p.done, p.total))
///     .cancel_when(|| stop.load(Ordering::Relaxed));
/// brisk::pack("model.gguf", "model.brisk", &Default::default(), hooks)?;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Hooks<'a> {
    progress: Option<ProgressFn<'a>>,
    cancel: Option<CancelFn<'a>>,
    log: Option<ToolLogFn<'a>>,
    mismatch: Option<MismatchFn<'a>>,
    tensor: Option<TensorFn<'a>>,
}

impl<'a> Hooks<'a> {
    /// No callbacks.
    pub fn new() -> Self {
        Hooks::default()
    }
    /// Progress reports.
    pub fn on_progress(mut self, f: impl FnMut(&Progress<'_>) + 'a) -> Self {
        self.progress = Some(Box::new(f));
        self
    }
    /// Polled between pieces of work: `true` cancels the call, which then
    /// fails with `Status::Cancelled` and leaves no partial output.
    pub fn cancel_when(mut self, f: impl FnMut() -> bool + 'a) -> Self {
        self.cancel = Some(Box::new(f));
        self
    }
    /// Warnings (type fallbacks, ...).
    pub fn on_log(mut self, f: impl FnMut(LogLevel, &str) + 'a) -> Self {
        self.log = Some(Box::new(f));
        self
    }
    /// Every difference [`verify`](crate::verify) finds.
    pub fn on_mismatch(mut self, f: impl FnMut(&Mismatch<'_>) + 'a) -> Self {
        self.mismatch = Some(Box::new(f));
        self
    }
    /// Every tensor [`quantize`](crate::quantize) writes.
    pub fn on_tensor(mut self, f: impl FnMut(&TensorInfo<'_>) + 'a) -> Self {
        self.tensor = Some(Box::new(f));
        self
    }
}

/// The state the trampolines see (user_data points here).
struct Run<'h, 'a> {
    hooks: &'h mut Hooks<'a>,
    panic: Option<PanicPayload>,
}

// The trampolines are monomorphic: they see Run through a pointer whose
// lifetimes are erased ('static), valid only for the duration of the call.
type RunPtr = *mut Run<'static, 'static>;

unsafe fn text<'s>(p: *const c_char) -> std::borrow::Cow<'s, str> {
    if p.is_null() {
        std::borrow::Cow::Borrowed("")
    } else {
        CStr::from_ptr(p).to_string_lossy()
    }
}

/// Runs f unless an earlier callback panicked; keeps its panic.
unsafe fn guarded(ud: *mut c_void, f: impl FnOnce(&mut Hooks<'static>)) -> bool {
    let run = &mut *(ud as RunPtr);
    if run.panic.is_some() {
        return false;
    }
    let hooks = &mut *run.hooks;
    match catch_unwind(AssertUnwindSafe(|| f(hooks))) {
        Ok(()) => true,
        Err(p) => {
            run.panic = Some(p);
            false
        }
    }
}

unsafe extern "C" fn progress_tr(
    ud: *mut c_void,
    stage: *const c_char,
    done: u64,
    total: u64,
    detail: *const c_char,
) -> c_int {
    let ok = guarded(ud, |h| {
        if let Some(f) = h.progress.as_mut() {
            f(&Progress { stage: &text(stage), done, total, detail: &text(detail) })
        }
    });
    (!ok) as c_int
}

/// The progress callback of a call without an abort callback (doctor): it
/// also polls `cancel_when`.
unsafe extern "C" fn progress_cancel_tr(
    ud: *mut c_void,
    stage: *const c_char,
    done: u64,
    total: u64,
    detail: *const c_char,
) -> c_int {
    match progress_tr(ud, stage, done, total, detail) {
        0 => abort_tr(ud),
        stop => stop,
    }
}

unsafe extern "C" fn abort_tr(ud: *mut c_void) -> c_int {
    let mut stop = false;
    let ok = guarded(ud, |h| {
        if let Some(f) = h.cancel.as_mut() {
            stop = f();
        }
    });
    (!ok || stop) as c_int
}

unsafe extern "C" fn log_tr(ud: *mut c_void, level: sys::brisk_log_level, message: *const c_char) {
    guarded(ud, |h| {
        if let Some(f) = h.log.as_mut() {
            f(LogLevel::from_code(level), &text(message))
        }
    });
}

unsafe extern "C" fn mismatch_tr(ud: *mut c_void, location: *const c_char, detail: *const c_char) {
    guarded(ud, |h| {
        if let Some(f) = h.mismatch.as_mut() {
            f(&Mismatch { location: &text(location), detail: &text(detail) })
        }
    });
}

unsafe extern "C" fn tensor_tr(
    ud: *mut c_void,
    name: *const c_char,
    src_type: i32,
    dst_type: i32,
    n_elements: u64,
    bytes: u64,
    why: *const c_char,
) {
    guarded(ud, |h| {
        if let Some(f) = h.tensor.as_mut() {
            f(&TensorInfo { name: &text(name), src_type, dst_type, n_elements, bytes, why: &text(why) })
        }
    });
}

/// The C callbacks to put in an options struct: `None` where the hook is
/// not set (the abort callback is always set: it also stops the call after
/// a panic).
pub(crate) struct Trampolines {
    pub user_data: *mut c_void,
    pub progress: sys::brisk_progress_fn,
    pub abort: sys::brisk_abort_fn,
    pub log: sys::brisk_log_fn,
    pub mismatch: sys::brisk_mismatch_fn,
    pub tensor: sys::brisk_quantize_tensor_fn,
    /// For a call with no abort callback (doctor): progress that also
    /// polls the cancel hook; `None` when neither is set.
    pub progress_cancel: sys::brisk_progress_fn,
}

/// Makes one toolchain call: `f` installs the trampolines into its options
/// and calls brisk. A panic of a callback resumes here, after the call.
pub(crate) fn run_hooked(mut hooks: Hooks<'_>, f: impl FnOnce(&Trampolines) -> c_int) -> Result<()> {
    let t = Trampolines {
        user_data: std::ptr::null_mut(),
        progress: if hooks.progress.is_some() { Some(progress_tr) } else { None },
        abort: Some(abort_tr),
        log: if hooks.log.is_some() { Some(log_tr) } else { None },
        mismatch: if hooks.mismatch.is_some() { Some(mismatch_tr) } else { None },
        tensor: if hooks.tensor.is_some() { Some(tensor_tr) } else { None },
        progress_cancel: if hooks.progress.is_some() || hooks.cancel.is_some() {
            Some(progress_cancel_tr)
        } else {
            None
        },
    };
    let mut run = Run { hooks: &mut hooks, panic: None };
    let t = Trampolines { user_data: &mut run as *mut Run as *mut c_void, ..t };
    let code = f(&t);
    if let Some(p) = run.panic.take() {
        resume_unwind(p);
    }
    check(code)
}
