// SPDX-License-Identifier: MIT
//! Safe Rust binding of brisk, a CPU inference engine for quantized
//! Llama-family models, over its stable C API (`include/brisk/brisk.h`).
//!
//! ```no_run
//! use brisk::{Flags, GenerateOptions, Model, SamplerOptions, Sampler, SessionOptions};
//! # fn main() -> Result<(), brisk::Error> {
//! let model = Model::open("stories260K.gguf")?;
//! let mut session = model.session(SessionOptions::default())?;
//! session.eval(&model.tokenize("Once upon a time", Flags::ADD_BOS)?)?;
//! let mut sampler = Sampler::new(&SamplerOptions::greedy())?;
//! session.generate_with(&mut sampler, &GenerateOptions::default(), |_token, text| {
//!     print!("{}", text);
//!     true // keep going
//! })?;
//! # Ok(()) }
//! ```
//!
//! Ownership and threads follow brisk.h:
//!
//! * [`Model`] is immutable: `Send + Sync`, share it by reference or `Arc`.
//! * [`Session`], [`Sampler`] and [`Engine`] are `Send` but not `Sync`: one
//!   thread at a time. A session or engine borrows its model, so it cannot
//!   outlive it.
//! * A [`Sequence`] borrows its engine and stays on the engine's thread; one
//!   thread drives any number of sequences with [`Engine::step`].
//!
//! The toolchain ([`convert_hf`], [`convert_llama2c`], [`verify`],
//! [`add_manifest`], [`pack`], [`unpack`], [`quantize`], [`calibrate`],
//! [`Model::perplexity`], [`compare`]) takes plain options and a [`Hooks`]
//! of callbacks (progress, cancellation, warnings, mismatches, tensors) that
//! run on the calling thread and may borrow local state; so does
//! [`doctor()`], the system checks of `brisk doctor`, which comes (like
//! [`Engine::read_bandwidth`] and the JSON of the quality results) from
//! `brisk_experimental.h` and may change in any release. Errors are
//! [`Error`] (a `std::error::Error`) with a [`Status`] kind:
//!
//! ```no_run
//! use brisk::{Hooks, Status, VerifyOptions};
//! match brisk::verify("model.brisk", &VerifyOptions::default(), Hooks::new()) {
//!     Ok(bytes) => println!("{} bytes verified", bytes),
//!     Err(e) if e.status() == Status::Checksum => eprintln!("damaged: {}", e),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ```compile_fail,E0597
//! // A session cannot outlive its model.
//! let session = {
//!     let model = brisk::Model::open("m.gguf").unwrap();
//!     model.session(Default::default()).unwrap()
//! };
//! ```
//!
//! ```compile_fail,E0277
//! // A session is not Sync: it cannot be used from two threads at once.
//! fn shared<T: Sync>() {}
//! shared::<brisk::Session<'static>>();
//! ```
//!
//! ```compile_fail,E0277
//! // Sequences stay on their engine's thread.
//! fn sendable<T: Send>() {}
//! sendable::<brisk::Sequence<'static>>();
//! ```

mod callback;

/// A C options struct with brisk's defaults, from its `_init` function.
pub(crate) fn init<T>(f: unsafe fn(*mut T)) -> T {
    unsafe {
        let mut c = std::mem::MaybeUninit::<T>::zeroed();
        f(c.as_mut_ptr());
        c.assume_init()
    }
}

mod doctor;
mod engine;
mod error;
mod hooks;
mod model;
mod quality;
mod session;
mod tools;

pub use engine::{Engine, EngineOptions, Sequence, SequenceState};
pub use error::{Error, Result, Status};
pub use model::{
    PlanMode,
    synthesize_model, synthetic_shapes, ChatMessage, ChatOptions, Flags, LogFn, LogLevel, Model, ModelOptions,
    SynthesizeOptions,
};
pub use session::{
    state_file_tokens, AbortFn, GenerateOptions, Generation, Sampler, SamplerOptions, Session, SessionOptions,
    StopReason,
};

// The toolchain: everything the `brisk` command does to files.
pub use hooks::{Hooks, Mismatch, Progress, TensorInfo};
pub use quality::{
    calibrate, compare, quantize, CalibrateOptions, Chunking, CompareOptions, Comparison, KlDivergence, Perplexity,
    PerplexityOptions, QuantizeOptions, Scoring,
};
pub use tools::{
    add_manifest, convert_hf, convert_llama2c, pack, unpack, verify, ConvertOptions, PackOptions, VerifyOptions,
};

// The system checks of `brisk doctor` (experimental: brisk_experimental.h).
pub use doctor::{doctor, DoctorOptions};

pub use brisk_sys as sys;

/// A token id.
pub type Token = i32;

/// A tensor element type (GGUF's type ids), used for the KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Let brisk choose.
    Auto,
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
    BF16,
}

impl Type {
    /// The C value (`brisk_type`).
    pub fn code(self) -> i32 {
        match self {
            Type::Auto => sys::BRISK_TYPE_AUTO,
            Type::F32 => sys::BRISK_TYPE_F32,
            Type::F16 => sys::BRISK_TYPE_F16,
            Type::Q4_0 => sys::BRISK_TYPE_Q4_0,
            Type::Q4_1 => sys::BRISK_TYPE_Q4_1,
            Type::Q8_0 => sys::BRISK_TYPE_Q8_0,
            Type::Q4K => sys::BRISK_TYPE_Q4_K,
            Type::Q5K => sys::BRISK_TYPE_Q5_K,
            Type::Q6K => sys::BRISK_TYPE_Q6_K,
            Type::BF16 => sys::BRISK_TYPE_BF16,
        }
    }

    /// The lower-case name the tools spell it with ("q4_0", "f16", "auto";
    /// `brisk_type_name`).
    pub fn name(self) -> &'static str {
        let p = unsafe { sys::brisk_type_name(self.code()) };
        if p.is_null() {
            return "?"; // a library older than this binding's types
        }
        // A static string in the library.
        unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap_or("?")
    }

    /// The type named `name` (as [`Type::name`] gives it, in any case);
    /// `Status::NotFound` for an unknown name, whose message lists the known
    /// ones.
    pub fn from_name(name: &str) -> Result<Type> {
        let cname = model::cstring(name, "type name")?;
        let mut code = sys::BRISK_TYPE_AUTO;
        error::check(unsafe { sys::brisk_type_from_name(cname.as_ptr(), &mut code) })?;
        Type::from_code(code).ok_or_else(|| {
            Error::new(Status::Unsupported, format!("type {} ({}) is newer than this binding", name, code))
        })
    }

    /// Every type this binding knows.
    pub const ALL: [Type; 10] = [
        Type::Auto,
        Type::F32,
        Type::F16,
        Type::Q4_0,
        Type::Q4_1,
        Type::Q8_0,
        Type::Q4K,
        Type::Q5K,
        Type::Q6K,
        Type::BF16,
    ];

    /// The type of a C value; `None` for one this binding does not know.
    pub fn from_code(code: i32) -> Option<Type> {
        Type::ALL.into_iter().find(|t| t.code() == code)
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The physical cores this process may run on (SMT siblings counted once),
/// at least 1: the thread count that `n_threads: 0` gives where an option
/// says "one per physical core".
pub fn physical_cores() -> u32 {
    unsafe { sys::brisk_physical_cores() }
}

/// The version of the libbrisk actually loaded, e.g. "0.1.0".
pub fn version() -> &'static str {
    // A static string in the library.
    unsafe { std::ffi::CStr::from_ptr(sys::brisk_version()) }.to_str().unwrap_or("?")
}

/// The ABI (major, minor) of the libbrisk actually loaded.
pub fn abi_version() -> (u32, u32) {
    let v = unsafe { sys::brisk_abi_version() };
    (v >> 16, v & 0xffff)
}
