// SPDX-License-Identifier: MIT
use std::cell::Cell;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::{self, NonNull};

use brisk_sys as sys;

pub use crate::callback::AbortFn;
use crate::callback::{rethrow, AbortSlot, TokenSlot};
use crate::error::{array_out, check, invalid, Result};
use crate::model::{path_cstring, Model};
use crate::{init, Token, Type};

/// Settings of a [`Session`]; `Default` gives brisk's defaults
/// (`brisk_session_options_init`).
pub struct SessionOptions {
    /// Context length; 0: the model's training context, at most 4096.
    pub n_ctx: u32,
    /// Worker threads; 0: one per physical core.
    pub n_threads: u32,
    /// Tokens per forward pass while reading a prompt.
    pub n_batch: u32,
    /// KV cache element types (F32, F16, Q8_0, Q4_0 or Auto).
    pub cache_type_k: Type,
    pub cache_type_v: Type,
    /// Do not pin worker threads to cores.
    pub no_pin: bool,
    /// With `no_pin` false, also pin the calling thread, which computes as
    /// thread 0, to the first core while the session exists; its CPU mask is
    /// given back when the session is dropped on that thread.
    pub pin_caller: bool,
    /// Memory the session may plan for, in bytes; 0: what the machine (its
    /// cgroup, MemAvailable) has available. Too small a budget fails the
    /// creation with `Status::OutOfMemory` and the numbers.
    pub memory_budget: u64,
    /// Polled between forward-pass chunks and layers on the calling thread;
    /// `true` cancels the call with `Status::Cancelled`.
    pub abort: Option<AbortFn>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        let c = init(sys::brisk_session_options_init);
        SessionOptions {
            n_ctx: c.n_ctx,
            n_threads: c.n_threads,
            n_batch: c.n_batch,
            cache_type_k: Type::from_code(c.cache_type_k).unwrap_or(Type::Auto),
            cache_type_v: Type::from_code(c.cache_type_v).unwrap_or(Type::Auto),
            no_pin: c.no_pin != 0,
            pin_caller: c.pin_caller != 0,
            memory_budget: c.memory_budget,
            abort: None,
        }
    }
}

/// One sequence with its own KV cache over a borrowed [`Model`]. `Send`,
/// not `Sync`.
pub struct Session<'m> {
    raw: NonNull<sys::brisk_session>,
    abort: *mut AbortSlot,
    n_vocab: usize,
    _model: PhantomData<&'m Model>,
}

// brisk.h: a session belongs to one thread at a time and may be handed
// between threads; its abort closure is Send.
unsafe impl Send for Session<'_> {}

impl<'m> Session<'m> {
    pub(crate) fn new(model: &'m Model, options: SessionOptions) -> Result<Session<'m>> {
        let mut c = init(sys::brisk_session_options_init);
        c.n_ctx = options.n_ctx;
        c.n_threads = options.n_threads;
        c.n_batch = options.n_batch;
        c.cache_type_k = options.cache_type_k.code();
        c.cache_type_v = options.cache_type_v.code();
        c.no_pin = options.no_pin as i32;
        c.pin_caller = options.pin_caller as i32;
        c.memory_budget = options.memory_budget;
        let mut abort = ptr::null_mut();
        if let Some(f) = options.abort {
            abort = AbortSlot::into_raw(f);
            c.abort_fn = AbortSlot::trampoline();
            c.abort_user_data = abort as *mut _;
        }
        let mut raw = ptr::null_mut();
        let r = check(unsafe { sys::brisk_session_create(model.raw(), &c, &mut raw) });
        match (r, NonNull::new(raw)) {
            (Ok(()), Some(raw)) => Ok(Session { raw, abort, n_vocab: model.n_vocab(), _model: PhantomData }),
            (r, _) => {
                unsafe { AbortSlot::free(abort) };
                Err(r.err().unwrap_or_else(|| invalid("no session")))
            }
        }
    }

    /// Runs a call that may poll the abort callback; re-raises its panic.
    fn run<T>(&mut self, f: impl FnOnce(*mut sys::brisk_session) -> T) -> T {
        let r = f(self.raw.as_ptr());
        unsafe { AbortSlot::rethrow(self.abort) };
        r
    }

    /// Forgets every token; the session starts again at position 0.
    pub fn reset(&mut self) -> Result<()> {
        check(unsafe { sys::brisk_session_reset(self.raw.as_ptr()) })
    }

    /// Forgets the tokens from `position` on; evaluate at least one token
    /// before asking for logits again.
    pub fn truncate(&mut self, position: u32) -> Result<()> {
        check(unsafe { sys::brisk_session_truncate(self.raw.as_ptr(), position) })
    }

    /// Number of tokens in the context so far.
    pub fn position(&self) -> u32 {
        unsafe { sys::brisk_session_position(self.raw.as_ptr()) }
    }

    pub fn n_ctx(&self) -> u32 {
        unsafe { sys::brisk_session_n_ctx(self.raw.as_ptr()) }
    }

    /// Appends tokens and evaluates them; `Status::ContextFull` (and nothing
    /// evaluated) if they do not fit.
    pub fn eval(&mut self, tokens: &[Token]) -> Result<()> {
        self.run(|p| check(unsafe { sys::brisk_session_eval(p, tokens.as_ptr(), tokens.len()) }))
    }

    /// Like [`Session::eval`], returning the logits after every token:
    /// `tokens.len()` rows of `n_vocab` floats.
    pub fn eval_all(&mut self, tokens: &[Token]) -> Result<Vec<f32>> {
        let want = tokens.len() * self.n_vocab;
        self.run(|p| {
            array_out(want, |buf, cap, needed| unsafe {
                sys::brisk_session_eval_all(p, tokens.as_ptr(), tokens.len(), buf, cap, needed)
            })
        })
    }

    /// The `n_vocab` logits after the last evaluated token.
    pub fn logits(&self) -> Result<Vec<f32>> {
        array_out(self.n_vocab, |buf, cap, needed| unsafe {
            sys::brisk_session_logits(self.raw.as_ptr(), buf, cap, needed)
        })
    }

    /// Writes the session's context to `path` (atomically, with a checksum,
    /// tied to the model and the cache types). Sessions do not keep their
    /// tokens, so `tokens` are the ones it evaluated (as many as its
    /// position). `sampler` adds its state (repetition window, random
    /// generator), so that sampling continues exactly as it would have. The
    /// session must have logits (not just truncated).
    pub fn save_state(&self, sampler: Option<&Sampler>, tokens: &[Token], path: impl AsRef<Path>) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        let smp = sampler.map_or(ptr::null(), |s| s.raw.as_ptr() as *const _);
        check(unsafe {
            sys::brisk_session_save_state(self.raw.as_ptr(), smp, tokens.as_ptr(), tokens.len(), cpath.as_ptr())
        })
    }

    /// Replaces the session's context with one [`Session::save_state`] wrote
    /// (and `sampler`'s state, when given and the file has one). Another
    /// model, other cache types or a damaged file are refused with the
    /// reason (`Status::Checksum`, ...) and change nothing; so is a file of
    /// a generating or finished engine sequence (use
    /// [`crate::Engine::load_sequence`]).
    pub fn load_state(&mut self, sampler: Option<&mut Sampler>, path: impl AsRef<Path>) -> Result<()> {
        let cpath = path_cstring(path.as_ref())?;
        let smp = sampler.map_or(ptr::null_mut(), |s| s.raw.as_ptr());
        check(unsafe { sys::brisk_session_load_state(self.raw.as_ptr(), smp, cpath.as_ptr()) })
    }

    /// Samples, evaluates and reports tokens until a stop condition; the
    /// prompt must have been evaluated first.
    pub fn generate(&mut self, sampler: &mut Sampler, options: &GenerateOptions) -> Result<Generation> {
        self.generate_impl(sampler, options, None::<fn(Option<Token>, &str) -> bool>)
    }

    /// [`Session::generate`] with a token callback: called with each token
    /// (`None` for the final flush of pending text) and its new complete
    /// UTF-8 text; return `false` to stop (`StopReason::Callback`).
    pub fn generate_with<F>(
        &mut self,
        sampler: &mut Sampler,
        options: &GenerateOptions,
        on_token: F,
    ) -> Result<Generation>
    where
        F: FnMut(Option<Token>, &str) -> bool,
    {
        self.generate_impl(sampler, options, Some(on_token))
    }

    fn generate_impl<F>(
        &mut self,
        sampler: &mut Sampler,
        options: &GenerateOptions,
        on_token: Option<F>,
    ) -> Result<Generation>
    where
        F: FnMut(Option<Token>, &str) -> bool,
    {
        let mut c = options.to_c()?;
        let sink = Cell::new(None);
        let mut slot = on_token.map(|f| TokenSlot::new(f, &sink));
        if let Some(slot) = slot.as_mut() {
            TokenSlot::install(slot, &mut c);
        }
        let mut n = 0usize;
        let mut reason = 0;
        let r = self.run(|p| check(unsafe { sys::brisk_generate(p, sampler.raw.as_ptr(), &c, &mut n, &mut reason) }));
        drop(slot);
        rethrow(&sink);
        r.map(|()| Generation { n_generated: n, stop_reason: StopReason::from_code(reason) })
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        unsafe {
            sys::brisk_session_free(self.raw.as_ptr());
            AbortSlot::free(self.abort);
        }
    }
}

/// The tokens a state file holds (written by [`Session::save_state`] or
/// [`crate::Sequence::save_state`]), those saved without their cache
/// included. The file is read and its checksum verified; no model is needed.
pub fn state_file_tokens(path: impl AsRef<Path>) -> Result<Vec<Token>> {
    let cpath = path_cstring(path.as_ref())?;
    array_out(256, |buf, cap, needed| unsafe { sys::brisk_state_file_tokens(cpath.as_ptr(), buf, cap, needed) })
}

/// Settings of a [`Sampler`]; `Default` gives brisk's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerOptions {
    /// <= 0: greedy (argmax).
    pub temperature: f32,
    /// <= 0: off.
    pub top_k: i32,
    /// >= 1: off.
    pub top_p: f32,
    /// <= 0: off.
    pub min_p: f32,
    /// 1: off.
    pub repeat_penalty: f32,
    /// Tokens looked back for the penalty.
    pub repeat_last_n: i32,
    /// Same seed, model and prompt: same text.
    pub seed: u64,
    /// OpenAI-style penalties over the last `repeat_last_n` tokens: a
    /// token's logit is lowered by `presence_penalty` once it appears there,
    /// plus `frequency_penalty` times its count. 0: off.
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        let c = init(sys::brisk_sampler_options_init);
        SamplerOptions {
            temperature: c.temperature,
            top_k: c.top_k,
            top_p: c.top_p,
            min_p: c.min_p,
            repeat_penalty: c.repeat_penalty,
            repeat_last_n: c.repeat_last_n,
            seed: c.seed,
            presence_penalty: c.presence_penalty,
            frequency_penalty: c.frequency_penalty,
        }
    }
}

impl SamplerOptions {
    /// The defaults with temperature 0: always the most likely token.
    pub fn greedy() -> Self {
        SamplerOptions { temperature: 0.0, ..Default::default() }
    }

    pub(crate) fn to_c(self) -> sys::brisk_sampler_options {
        let mut c = init(sys::brisk_sampler_options_init);
        c.temperature = self.temperature;
        c.top_k = self.top_k;
        c.top_p = self.top_p;
        c.min_p = self.min_p;
        c.repeat_penalty = self.repeat_penalty;
        c.repeat_last_n = self.repeat_last_n;
        c.seed = self.seed;
        c.presence_penalty = self.presence_penalty;
        c.frequency_penalty = self.frequency_penalty;
        c
    }
}

/// Draws tokens from a session's logits. `Send`, not `Sync`.
pub struct Sampler {
    raw: NonNull<sys::brisk_sampler>,
}

unsafe impl Send for Sampler {}

impl Sampler {
    pub fn new(options: &SamplerOptions) -> Result<Sampler> {
        let c = options.to_c();
        let mut raw = ptr::null_mut();
        check(unsafe { sys::brisk_sampler_create(&c, &mut raw) })?;
        NonNull::new(raw).map(|raw| Sampler { raw }).ok_or_else(|| invalid("no sampler"))
    }

    /// Draws the next token from the session's current logits (it does not
    /// evaluate it: call [`Sampler::accept`] and [`Session::eval`]).
    pub fn sample(&mut self, session: &Session) -> Result<Token> {
        let mut t = -1;
        check(unsafe { sys::brisk_sampler_sample(self.raw.as_ptr(), session.raw.as_ptr(), &mut t) })?;
        Ok(t)
    }

    /// Tells the sampler a token is in the context (repetition penalty).
    pub fn accept(&mut self, token: Token) {
        unsafe { sys::brisk_sampler_accept(self.raw.as_ptr(), token) }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        unsafe { sys::brisk_sampler_free(self.raw.as_ptr()) }
    }
}

/// Settings of a generation; `Default` gives brisk's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenerateOptions {
    pub max_tokens: i32,
    pub stop_at_eos: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        let c = init(sys::brisk_generate_options_init);
        GenerateOptions { max_tokens: c.max_tokens, stop_at_eos: c.stop_at_eos != 0 }
    }
}

impl GenerateOptions {
    pub(crate) fn to_c(self) -> Result<sys::brisk_generate_options> {
        if self.max_tokens < 0 {
            return Err(invalid("max_tokens must not be negative"));
        }
        let mut c = init(sys::brisk_generate_options_init);
        c.max_tokens = self.max_tokens;
        c.stop_at_eos = self.stop_at_eos as i32;
        Ok(c)
    }
}

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    MaxTokens,
    /// The model produced its end-of-sequence token.
    Eos,
    /// The token callback returned `false`.
    Callback,
    ContextFull,
    /// A reason newer than this binding.
    Other(i32),
}

impl StopReason {
    pub(crate) fn from_code(code: i32) -> StopReason {
        match code {
            sys::BRISK_STOP_MAX_TOKENS => StopReason::MaxTokens,
            sys::BRISK_STOP_EOS => StopReason::Eos,
            sys::BRISK_STOP_CALLBACK => StopReason::Callback,
            sys::BRISK_STOP_CONTEXT_FULL => StopReason::ContextFull,
            other => StopReason::Other(other),
        }
    }
}

/// What a generation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generation {
    /// Tokens generated (an end-of-sequence token not counted).
    pub n_generated: usize,
    pub stop_reason: StopReason,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("position", &self.position()).field("n_ctx", &self.n_ctx()).finish()
    }
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler").finish_non_exhaustive()
    }
}
