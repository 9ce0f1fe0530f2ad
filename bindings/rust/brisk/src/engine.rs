// SPDX-License-Identifier: MIT
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr::{self, NonNull};

use brisk_sys as sys;

use crate::callback::{rethrow, AbortFn, AbortSlot, ErasedSlot, PanicSink, TokenSlot};
use crate::error::{array_out, check, invalid, text_out, Result};
use crate::model::{cstring, path_cstring, Flags, Model};
use crate::session::{GenerateOptions, SamplerOptions};
use crate::{Token, Type};

/// Settings of an [`Engine`]; `Default` gives brisk's defaults
/// (`brisk_engine_options_init`).
pub struct EngineOptions {
    /// Per sequence; 0: the model's training context, at most 4096.
    pub n_ctx: u32,
    /// Sequences that can exist at once.
    pub n_seq_max: u32,
    /// 0: one per physical core.
    pub n_threads: u32,
    /// Most tokens per step.
    pub n_batch: u32,
    /// KV cache element types (F32, F16, Q8_0, Q4_0 or Auto).
    pub cache_type_k: Type,
    pub cache_type_v: Type,
    /// Do not pin threads to cores.
    pub no_pin: bool,
    /// e.g. "0,2,4,6": pin thread i to the i-th CPU; `None`: one per physical core.
    pub cpu_list: Option<String>,
    /// Memory the engine may plan for, in bytes; 0: what the machine has.
    pub memory_budget: u64,
    /// With `no_pin` false, also pin the calling thread, which computes as
    /// thread 0, to the first core or the first CPU of `cpu_list` while the
    /// engine exists.
    pub pin_caller: bool,
    /// Polled during [`Engine::step`]; `true` cancels the step.
    pub abort: Option<AbortFn>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_engine_options_init);
        EngineOptions {
            n_ctx: c.n_ctx,
            n_seq_max: c.n_seq_max,
            n_threads: c.n_threads,
            n_batch: c.n_batch,
            cache_type_k: Type::from_code(c.cache_type_k).unwrap_or(Type::Auto),
            cache_type_v: Type::from_code(c.cache_type_v).unwrap_or(Type::Auto),
            no_pin: c.no_pin != 0,
            cpu_list: None,
            memory_budget: c.memory_budget,
            pin_caller: c.pin_caller != 0,
            abort: None,
        }
    }
}

/// A killed callback slot whose sequence could not be freed yet.
type DeadSlot = *mut (dyn ErasedSlot + 'static);

/// Many sequences per weight read: each [`Engine::step`] is one forward
/// pass over the work of every sequence. `Send`, not `Sync`; its sequences
/// borrow it, so they stay on its thread and cannot outlive it.
pub struct Engine<'m> {
    raw: NonNull<sys::brisk_engine>,
    abort: *mut AbortSlot,
    /// Inside a C call that may run token callbacks (step, generate).
    in_callback: Cell<bool>,
    /// A panic from a token callback, resumed when the C call returns.
    panic: PanicSink,
    /// Sequences dropped inside a callback: freed after the call.
    deferred: RefCell<Vec<(NonNull<sys::brisk_sequence>, Vec<DeadSlot>)>>,
    _model: PhantomData<&'m Model>,
}

// brisk.h: an engine and its sequences belong to one thread at a time. The
// sequences borrow the engine, so it can only be sent without any; the
// deferred list is empty between calls and the abort closure is Send.
unsafe impl Send for Engine<'_> {}

impl EngineOptions {
    /// The C options, all but the abort callback, and the CPU list they
    /// point to (brisk reads it during the call and does not keep it).
    pub(crate) fn to_c(&self) -> Result<(sys::brisk_engine_options, Option<CString>)> {
        let mut c = crate::init(sys::brisk_engine_options_init);
        c.n_ctx = self.n_ctx;
        c.n_seq_max = self.n_seq_max;
        c.n_threads = self.n_threads;
        c.n_batch = self.n_batch;
        c.cache_type_k = self.cache_type_k.code();
        c.cache_type_v = self.cache_type_v.code();
        c.no_pin = self.no_pin as i32;
        c.memory_budget = self.memory_budget;
        c.pin_caller = self.pin_caller as i32;
        let cpu_list: Option<CString> = self.cpu_list.as_deref().map(|s| cstring(s, "cpu list")).transpose()?;
        c.cpu_list = cpu_list.as_ref().map_or(ptr::null(), |s| s.as_ptr() as *const c_char);
        Ok((c, cpu_list))
    }
}

impl<'m> Engine<'m> {
    pub(crate) fn new(model: &'m Model, options: EngineOptions) -> Result<Engine<'m>> {
        let (mut c, _cpu_list) = options.to_c()?;
        let mut abort = ptr::null_mut();
        if let Some(f) = options.abort {
            abort = AbortSlot::into_raw(f);
            c.abort_fn = AbortSlot::trampoline();
            c.abort_user_data = abort as *mut _;
        }
        let mut raw = ptr::null_mut();
        let r = check(unsafe { sys::brisk_engine_create(model.raw(), &c, &mut raw) });
        match (r, NonNull::new(raw)) {
            (Ok(()), Some(raw)) => Ok(Engine {
                raw,
                abort,
                in_callback: Cell::new(false),
                panic: Cell::new(None),
                deferred: RefCell::new(Vec::new()),
                _model: PhantomData,
            }),
            (r, _) => {
                unsafe { AbortSlot::free(abort) };
                Err(r.err().unwrap_or_else(|| invalid("no engine")))
            }
        }
    }

    fn not_in_callback(&self) -> Result<()> {
        if self.in_callback.get() {
            Err(invalid("not allowed inside a token callback of the same engine"))
        } else {
            Ok(())
        }
    }

    /// Runs a C call during which brisk may call token callbacks; frees what
    /// they dropped and resumes their panics afterwards.
    fn with_callbacks<T>(&self, f: impl FnOnce() -> T) -> T {
        self.in_callback.set(true);
        let r = f();
        self.in_callback.set(false);
        self.free_deferred();
        unsafe { AbortSlot::rethrow(self.abort) };
        rethrow(&self.panic);
        r
    }

    fn free_deferred(&self) {
        let list = std::mem::take(&mut *self.deferred.borrow_mut());
        for (seq, slots) in list {
            unsafe {
                sys::brisk_sequence_free(seq.as_ptr());
                for s in slots {
                    drop(Box::from_raw(s));
                }
            }
        }
    }

    /// One line: threads, slots, KV cache types and memory.
    pub fn describe(&self) -> Result<String> {
        text_out(|buf, cap, needed| unsafe { sys::brisk_engine_describe(self.raw.as_ptr(), buf, cap, needed) })
    }

    /// Threads the engine computes with (the calling thread included).
    pub fn n_threads(&self) -> u32 {
        unsafe { sys::brisk_engine_n_threads(self.raw.as_ptr()) }
    }

    /// The memory read bandwidth the engine's threads reach, in GB/s (1e9
    /// bytes/s): (median, min, max) over `passes` streams of a fresh buffer
    /// of `bytes` (0 for the defaults: 512 MiB, 8 passes). Decoding reads
    /// every weight once per step, so a model of `file_size()` bytes decodes
    /// at most `median * 1e9 / file_size` steps per second.
    pub fn read_bandwidth(&self, bytes: u64, passes: u32) -> Result<(f64, f64, f64)> {
        self.not_in_callback()?;
        let (mut md, mut mn, mut mx) = (0f64, 0f64, 0f64);
        check(unsafe { sys::brisk_engine_read_bandwidth(self.raw.as_ptr(), bytes, passes, &mut md, &mut mn, &mut mx) })?;
        Ok((md, mn, mx))
    }

    /// One forward pass over all ready work; token callbacks run inside it.
    /// Returns the number of sequences that still have work. A panic in a
    /// callback stops that sequence and is resumed here.
    pub fn step(&self) -> Result<u32> {
        self.not_in_callback()?;
        let mut n = 0u32;
        self.with_callbacks(|| check(unsafe { sys::brisk_engine_step(self.raw.as_ptr(), &mut n) }))?;
        Ok(n)
    }

    /// Steps until no sequence has work.
    pub fn run(&self) -> Result<()> {
        while self.step()? > 0 {}
        Ok(())
    }

    /// A new, empty sequence in a free slot (`Status::OutOfMemory` if none).
    pub fn sequence(&self) -> Result<Sequence<'_>> {
        self.not_in_callback()?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::brisk_sequence_create(self.raw.as_ptr(), &mut raw) })?;
        Ok(Sequence::adopt(self, raw))
    }

    /// A sequence from a file [`Sequence::save_state`] wrote. Tokens saved
    /// without their cache are queued (`Prefill`); a saved generation waits
    /// for [`Sequence::resume`]. Another model, other cache types or a
    /// damaged file are refused with the reason (`Status::Checksum`, ...).
    pub fn load_sequence(&self, path: impl AsRef<Path>) -> Result<Sequence<'_>> {
        self.not_in_callback()?;
        let cpath = path_cstring(path.as_ref())?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::brisk_sequence_load_state(self.raw.as_ptr(), cpath.as_ptr(), &mut raw) })?;
        Ok(Sequence::adopt(self, raw))
    }
}

impl Drop for Engine<'_> {
    fn drop(&mut self) {
        // Every Sequence borrowed the engine and is gone.
        self.free_deferred();
        unsafe {
            sys::brisk_engine_free(self.raw.as_ptr());
            AbortSlot::free(self.abort);
        }
    }
}

/// Where a sequence is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SequenceState {
    /// Evaluated everything it was given; not generating.
    Idle,
    /// Prompt tokens still to evaluate.
    Prefill,
    Generating,
    /// Done (see [`Sequence::stop_reason`]); its slot is free.
    Finished,
    /// A state newer than this binding.
    Other(i32),
}

/// One request in an [`Engine`]. Not `Send`: it stays on its engine's thread.
pub struct Sequence<'e> {
    raw: NonNull<sys::brisk_sequence>,
    engine: &'e Engine<'e>,
    /// The token callback, plus any a failed generate may still reference
    /// (NonNull, unlike *mut, keeps Sequence covariant in 'e).
    slots: Vec<NonNull<dyn ErasedSlot + 'e>>,
}

impl<'e> Sequence<'e> {
    fn adopt(engine: &'e Engine<'e>, raw: *mut sys::brisk_sequence) -> Sequence<'e> {
        Sequence { raw: NonNull::new(raw).expect("brisk returned a null sequence"), engine, slots: Vec::new() }
    }

    fn mutable(&self) -> Result<*mut sys::brisk_sequence> {
        self.engine.not_in_callback()?;
        Ok(self.raw.as_ptr())
    }

    /// A new sequence whose context is a copy of this one's, which must be
    /// idle: a shared prefix is evaluated once and forked per request.
    pub fn fork(&self) -> Result<Sequence<'e>> {
        let src = self.mutable()?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::brisk_sequence_fork(src, &mut raw) })?;
        Ok(Sequence::adopt(self.engine, raw))
    }

    /// Queues tokens to evaluate in coming steps.
    pub fn add_tokens(&mut self, tokens: &[Token]) -> Result<()> {
        let p = self.mutable()?;
        check(unsafe { sys::brisk_sequence_add_tokens(p, tokens.as_ptr(), tokens.len()) })
    }

    /// Tokenizes text (flags as [`Model::tokenize`]) and queues the tokens.
    pub fn add_text(&mut self, text: &str, flags: Flags) -> Result<()> {
        let p = self.mutable()?;
        check(unsafe { sys::brisk_sequence_add_text(p, text.as_ptr() as *const c_char, text.len(), flags.0) })
    }

    /// Generates after the queued tokens; poll [`Sequence::generated`].
    pub fn generate(&mut self, sampling: &SamplerOptions, options: &GenerateOptions) -> Result<()> {
        let p = self.mutable()?;
        let s = sampling.to_c();
        let c = options.to_c()?;
        let r = self.engine.with_callbacks(|| check(unsafe { sys::brisk_sequence_generate(p, &s, &c) }));
        if r.is_ok() {
            self.drop_slots(); // brisk no longer calls the old callback
        }
        r
    }

    /// [`Sequence::generate`] with a token callback, called during
    /// [`Engine::step`] — or already inside this call for an idle sequence
    /// (a fork, or one whose prompt is evaluated), whose first token is
    /// sampled at once. It gets each token (`None` for the final flush of
    /// pending text) and its new complete UTF-8 text; return `false` to stop.
    /// It must not change the engine or its sequences (those calls fail).
    pub fn generate_with<F>(&mut self, sampling: &SamplerOptions, options: &GenerateOptions, on_token: F) -> Result<()>
    where
        F: FnMut(Option<Token>, &str) -> bool + 'e,
    {
        let p = self.mutable()?;
        let s = sampling.to_c();
        let mut c = options.to_c()?;
        let slot: *mut TokenSlot<F> = Box::into_raw(Box::new(TokenSlot::new(on_token, &self.engine.panic)));
        TokenSlot::install(slot, &mut c);
        let r = self.engine.with_callbacks(|| check(unsafe { sys::brisk_sequence_generate(p, &s, &c) }));
        if r.is_ok() {
            self.drop_slots();
        }
        // On failure brisk may have stored the new callback already: keep it
        // until the sequence is freed.
        self.slots.push(unsafe { NonNull::new_unchecked(slot as *mut (dyn ErasedSlot + 'e)) });
        r
    }

    /// Forgets the sequence's tokens from `position` on (`position` <= its
    /// position; the sequence must be idle): a fork of a cached prompt cut
    /// back to the part another prompt shares. Add at least one token
    /// before generating.
    pub fn truncate(&mut self, position: u32) -> Result<()> {
        let p = self.mutable()?;
        check(unsafe { sys::brisk_sequence_truncate(p, position) })
    }

    /// Writes the sequence to `path` (atomically, with a checksum, tied to
    /// the model and the cache types): an idle one; a generating one between
    /// steps, with its generation (sampler state, budget, tokens so far),
    /// which [`Sequence::resume`] continues after [`Engine::load_sequence`];
    /// or a finished one, whose text is evaluated again on load.
    pub fn save_state(&self, path: impl AsRef<Path>) -> Result<()> {
        let p = self.mutable()?;
        let cpath = path_cstring(path.as_ref())?;
        check(unsafe { sys::brisk_sequence_save_state(p, cpath.as_ptr()) })
    }

    /// Continues the generation of a sequence loaded from a file saved while
    /// generating: it produces the tokens it would have had it never
    /// stopped (its saved budget and `stop_at_eos` apply); poll
    /// [`Sequence::generated`], which includes the tokens before the save.
    pub fn resume(&mut self) -> Result<()> {
        let p = self.mutable()?;
        let c = GenerateOptions::default().to_c()?;
        let r = self.engine.with_callbacks(|| check(unsafe { sys::brisk_sequence_resume(p, &c) }));
        if r.is_ok() {
            self.drop_slots();
        }
        r
    }

    /// [`Sequence::resume`] with a token callback (callbacks are not saved),
    /// called as with [`Sequence::generate_with`].
    pub fn resume_with<F>(&mut self, on_token: F) -> Result<()>
    where
        F: FnMut(Option<Token>, &str) -> bool + 'e,
    {
        let p = self.mutable()?;
        let mut c = GenerateOptions::default().to_c()?;
        let slot: *mut TokenSlot<F> = Box::into_raw(Box::new(TokenSlot::new(on_token, &self.engine.panic)));
        TokenSlot::install(slot, &mut c);
        let r = self.engine.with_callbacks(|| check(unsafe { sys::brisk_sequence_resume(p, &c) }));
        if r.is_ok() {
            self.drop_slots();
        }
        self.slots.push(unsafe { NonNull::new_unchecked(slot as *mut (dyn ErasedSlot + 'e)) });
        r
    }

    fn drop_slots(&mut self) {
        for s in self.slots.drain(..) {
            unsafe { drop(Box::from_raw(s.as_ptr())) };
        }
    }

    /// The sequence's state; fine to read inside a callback.
    pub fn state(&self) -> SequenceState {
        match unsafe { sys::brisk_sequence_get_state(self.raw.as_ptr()) } {
            sys::BRISK_SEQ_IDLE => SequenceState::Idle,
            sys::BRISK_SEQ_PREFILL => SequenceState::Prefill,
            sys::BRISK_SEQ_GENERATING => SequenceState::Generating,
            sys::BRISK_SEQ_FINISHED => SequenceState::Finished,
            other => SequenceState::Other(other),
        }
    }

    /// Why a finished sequence stopped.
    pub fn stop_reason(&self) -> crate::StopReason {
        crate::StopReason::from_code(unsafe { sys::brisk_sequence_stop_reason(self.raw.as_ptr()) })
    }

    /// Tokens in the sequence's cache.
    pub fn position(&self) -> u32 {
        unsafe { sys::brisk_sequence_position(self.raw.as_ptr()) }
    }

    /// The tokens generated so far; fine to read inside a callback.
    pub fn generated(&self) -> Result<Vec<Token>> {
        array_out(64, |buf, cap, needed| unsafe { sys::brisk_sequence_generated(self.raw.as_ptr(), buf, cap, needed) })
    }
}

impl Drop for Sequence<'_> {
    fn drop(&mut self) {
        if self.engine.in_callback.get() {
            // brisk is inside a step that may still reach this sequence:
            // drop the closures now, free the sequence after the step.
            let mut dead = Vec::with_capacity(self.slots.len());
            for s in self.slots.drain(..) {
                unsafe {
                    s.as_ref().kill();
                    // Killed: nothing of lifetime 'e is left in the slot.
                    dead.push(std::mem::transmute::<*mut (dyn ErasedSlot + '_), DeadSlot>(s.as_ptr()));
                }
            }
            self.engine.deferred.borrow_mut().push((self.raw, dead));
            return;
        }
        unsafe { sys::brisk_sequence_free(self.raw.as_ptr()) };
        self.drop_slots();
    }
}

impl std::fmt::Debug for Engine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("description", &self.describe().unwrap_or_default()).finish()
    }
}

impl std::fmt::Debug for Sequence<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequence").field("state", &self.state()).field("position", &self.position()).finish()
    }
}
