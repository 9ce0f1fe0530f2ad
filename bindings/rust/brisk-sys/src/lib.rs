// SPDX-License-Identifier: MIT
//! Raw declarations of `include/brisk/brisk.h`, written by hand (no bindgen).
//!
//! Everything here is `unsafe` and mirrors the C header one to one; see the
//! header for what each call does, and the `brisk` crate for a safe API.
//! The calls of `brisk_experimental.h` that the `brisk` crate binds (the
//! engine's read bandwidth, the perplexity and compare results' readers,
//! `brisk doctor`) are declared here too; they may change in any release.
//! C enums are plain `c_int` type aliases with constants, not Rust enums:
//! brisk's enums only grow, and a value a newer library returns must not be
//! undefined behaviour here.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_void};

// ---- versions ---------------------------------------------------------------
pub const BRISK_VERSION_MAJOR: u32 = 0;
pub const BRISK_VERSION_MINOR: u32 = 8;
pub const BRISK_VERSION_PATCH: u32 = 0;
pub const BRISK_ABI_VERSION_MAJOR: u32 = 0;
pub const BRISK_ABI_VERSION_MINOR: u32 = 8;

// ---- status -----------------------------------------------------------------
pub type brisk_status = c_int;
pub const BRISK_OK: brisk_status = 0;
pub const BRISK_ERR_INVALID_ARGUMENT: brisk_status = -1;
pub const BRISK_ERR_NOT_FOUND: brisk_status = -2;
pub const BRISK_ERR_IO: brisk_status = -3;
pub const BRISK_ERR_BAD_FORMAT: brisk_status = -4;
pub const BRISK_ERR_UNSUPPORTED: brisk_status = -5;
pub const BRISK_ERR_OUT_OF_MEMORY: brisk_status = -6;
pub const BRISK_ERR_CONTEXT_FULL: brisk_status = -7;
pub const BRISK_ERR_BUFFER_TOO_SMALL: brisk_status = -8;
pub const BRISK_ERR_CANCELLED: brisk_status = -9;
pub const BRISK_ERR_CHECKSUM: brisk_status = -10;
pub const BRISK_ERR_INTERNAL: brisk_status = -11;

// ---- tensor types -----------------------------------------------------------
pub type brisk_type = c_int;
pub const BRISK_TYPE_AUTO: brisk_type = -1;
pub const BRISK_TYPE_F32: brisk_type = 0;
pub const BRISK_TYPE_F16: brisk_type = 1;
pub const BRISK_TYPE_Q4_0: brisk_type = 2;
pub const BRISK_TYPE_Q4_1: brisk_type = 3;
pub const BRISK_TYPE_Q8_0: brisk_type = 8;
pub const BRISK_TYPE_Q4_K: brisk_type = 12;
pub const BRISK_TYPE_Q5_K: brisk_type = 13;
pub const BRISK_TYPE_Q6_K: brisk_type = 14;
pub const BRISK_TYPE_BF16: brisk_type = 30;

// ---- callbacks --------------------------------------------------------------
pub type brisk_log_level = c_int;
pub const BRISK_LOG_ERROR: brisk_log_level = 0;
pub const BRISK_LOG_WARN: brisk_log_level = 1;
pub const BRISK_LOG_INFO: brisk_log_level = 2;
pub const BRISK_LOG_DEBUG: brisk_log_level = 3;

pub type brisk_log_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, level: brisk_log_level, message: *const c_char)>;
pub type brisk_abort_fn = Option<unsafe extern "C" fn(user_data: *mut c_void) -> c_int>;
pub type brisk_token_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, token: i32, text: *const c_char, text_len: usize) -> c_int>;
pub type brisk_progress_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        stage: *const c_char,
        done: u64,
        total: u64,
        detail: *const c_char,
    ) -> c_int,
>;
pub type brisk_mismatch_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, location: *const c_char, detail: *const c_char)>;
pub type brisk_quantize_tensor_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        name: *const c_char,
        src_type: i32,
        dst_type: i32,
        n_elements: u64,
        bytes: u64,
        why: *const c_char,
    ),
>;

// ---- opaque handles -----------------------------------------------------------
macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(
    brisk_model,
    brisk_session,
    brisk_sampler,
    brisk_engine,
    brisk_sequence,
    brisk_ppl_result,
    brisk_compare_result,
    brisk_doctor_report
);

// The toolchain's option structs, calls and result handles (and brisk
// doctor's).
mod tools;
pub use tools::*;

// ---- option structs -----------------------------------------------------------
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_model_options {
    pub struct_size: u32,
    pub log_fn: brisk_log_fn,
    pub log_user_data: *mut c_void,
    pub log_level: brisk_log_level,
    pub vocab_only: i32,
    pub verify: i32,
    /// Added in ABI 0.4: lock the model's pages in RAM (mlock).
    pub mlock: i64,
    /// Added in ABI 0.4: read the file into memory instead of mapping it.
    pub no_mmap: i64,
    /// Added in ABI 0.5: one of brisk_plan_mode.
    pub plan_mode: i64,
    /// Added in ABI 0.5: directory of cached kernel plans; null: the default.
    pub plan_cache_dir: *const c_char,
    /// Added in ABI 0.5: threads a plan is measured with (0: one per physical core).
    pub plan_threads: i64,
}

pub type brisk_plan_mode = c_int;
pub const BRISK_PLAN_DEFAULT: brisk_plan_mode = 0;
pub const BRISK_PLAN_AUTO: brisk_plan_mode = 1;
pub const BRISK_PLAN_FIXED: brisk_plan_mode = 2;
pub const BRISK_PLAN_MEASURE: brisk_plan_mode = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_session_options {
    pub struct_size: u32,
    pub n_ctx: u32,
    pub n_threads: u32,
    pub n_batch: u32,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub cache_type_k: i32,
    pub cache_type_v: i32,
    pub no_pin: i32,
    /// Added in ABI 0.4.
    pub pin_caller: i32,
    /// Added in ABI 0.4.
    pub memory_budget: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_sampler_options {
    pub struct_size: u32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub repeat_last_n: i32,
    pub seed: u64,
    /// Added in ABI 0.4.
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
}

pub type brisk_stop_reason = c_int;
pub const BRISK_STOP_MAX_TOKENS: brisk_stop_reason = 0;
pub const BRISK_STOP_EOS: brisk_stop_reason = 1;
pub const BRISK_STOP_CALLBACK: brisk_stop_reason = 2;
pub const BRISK_STOP_CONTEXT_FULL: brisk_stop_reason = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_generate_options {
    pub struct_size: u32,
    pub max_tokens: i32,
    pub stop_at_eos: i32,
    pub token_fn: brisk_token_fn,
    pub token_user_data: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_engine_options {
    pub struct_size: u32,
    pub n_ctx: u32,
    pub n_seq_max: u32,
    pub n_threads: u32,
    pub n_batch: u32,
    pub cache_type_k: i32,
    pub cache_type_v: i32,
    pub no_pin: i32,
    pub cpu_list: *const c_char,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub memory_budget: u64,
    /// Added in ABI 0.4.
    pub pin_caller: i32,
}

pub type brisk_sequence_state = c_int;
pub const BRISK_SEQ_IDLE: brisk_sequence_state = 0;
pub const BRISK_SEQ_PREFILL: brisk_sequence_state = 1;
pub const BRISK_SEQ_GENERATING: brisk_sequence_state = 2;
pub const BRISK_SEQ_FINISHED: brisk_sequence_state = 3;

/// Added in ABI 0.4.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_chat_options {
    pub struct_size: u32,
    pub template_name: *const c_char,
    pub add_assistant: i32,
    pub allow_control_tokens: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_synthesize_options {
    pub struct_size: u32,
    pub shape: *const c_char,
    pub weight_type: *const c_char,
    pub seed: u64,
    pub n_threads: u32,
}

// ---- tokens -------------------------------------------------------------------
pub const BRISK_TOKENIZE_ADD_BOS: u32 = 1 << 0;
pub const BRISK_TOKENIZE_PARSE_SPECIAL: u32 = 1 << 1;
pub const BRISK_PIECE_SPECIAL: u32 = 1 << 2;

extern "C" {
    // versions and errors
    pub fn brisk_version() -> *const c_char;
    pub fn brisk_abi_version() -> u32;
    pub fn brisk_status_name(status: brisk_status) -> *const c_char;
    pub fn brisk_last_error() -> *const c_char;

    // tensor types (added in ABI 0.4)
    pub fn brisk_type_name(type_: brisk_type) -> *const c_char;
    pub fn brisk_type_from_name(name: *const c_char, out_type: *mut brisk_type) -> brisk_status;

    // model
    pub fn brisk_model_options_init_sized(options: *mut brisk_model_options, size: usize);
    pub fn brisk_model_open(
        path: *const c_char,
        options: *const brisk_model_options,
        out_model: *mut *mut brisk_model,
    ) -> brisk_status;
    pub fn brisk_model_close(model: *mut brisk_model);
    pub fn brisk_model_n_vocab(model: *const brisk_model) -> i32;
    pub fn brisk_model_n_ctx_train(model: *const brisk_model) -> i32;
    pub fn brisk_model_token_bos(model: *const brisk_model) -> i32;
    pub fn brisk_model_token_eos(model: *const brisk_model) -> i32;
    pub fn brisk_model_describe(
        model: *const brisk_model,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    /// Added in ABI 0.5.
    pub fn brisk_model_kernel_plan(
        model: *const brisk_model,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_model_weight_type(
        model: *const brisk_model,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_model_file_size(model: *const brisk_model) -> u64;
    pub fn brisk_model_decode_bytes(model: *const brisk_model) -> u64;
    pub fn brisk_model_meta(
        model: *const brisk_model,
        key: *const c_char,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;

    // tokens
    pub fn brisk_tokenize(
        model: *const brisk_model,
        text: *const c_char,
        len: usize,
        flags: u32,
        tokens: *mut i32,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_token_to_piece(
        model: *const brisk_model,
        token: i32,
        flags: u32,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_detokenize(
        model: *const brisk_model,
        tokens: *const i32,
        n_tokens: usize,
        flags: u32,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;

    // chat templates
    pub fn brisk_chat_render(
        model: *const brisk_model,
        template_name: *const c_char,
        roles: *const *const c_char,
        contents: *const *const c_char,
        n_messages: usize,
        add_assistant: i32,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    /// Added in ABI 0.4.
    pub fn brisk_chat_options_init_sized(options: *mut brisk_chat_options, size: usize);
    /// Added in ABI 0.4.
    pub fn brisk_chat_render_ex(
        model: *const brisk_model,
        roles: *const *const c_char,
        contents: *const *const c_char,
        n_messages: usize,
        options: *const brisk_chat_options,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;

    // sessions
    pub fn brisk_session_options_init_sized(options: *mut brisk_session_options, size: usize);
    pub fn brisk_session_create(
        model: *const brisk_model,
        options: *const brisk_session_options,
        out_session: *mut *mut brisk_session,
    ) -> brisk_status;
    pub fn brisk_session_free(session: *mut brisk_session);
    pub fn brisk_session_reset(session: *mut brisk_session) -> brisk_status;
    pub fn brisk_session_truncate(session: *mut brisk_session, position: u32) -> brisk_status;
    pub fn brisk_session_position(session: *const brisk_session) -> u32;
    pub fn brisk_session_n_ctx(session: *const brisk_session) -> u32;
    pub fn brisk_session_eval(session: *mut brisk_session, tokens: *const i32, n_tokens: usize) -> brisk_status;
    pub fn brisk_session_eval_all(
        session: *mut brisk_session,
        tokens: *const i32,
        n_tokens: usize,
        logits: *mut f32,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_session_logits(
        session: *const brisk_session,
        logits: *mut f32,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;

    // sampling
    pub fn brisk_sampler_options_init_sized(options: *mut brisk_sampler_options, size: usize);
    pub fn brisk_sampler_create(
        options: *const brisk_sampler_options,
        out_sampler: *mut *mut brisk_sampler,
    ) -> brisk_status;
    pub fn brisk_sampler_free(sampler: *mut brisk_sampler);
    pub fn brisk_sampler_sample(
        sampler: *mut brisk_sampler,
        session: *const brisk_session,
        out_token: *mut i32,
    ) -> brisk_status;
    pub fn brisk_sampler_accept(sampler: *mut brisk_sampler, token: i32);

    // generation
    pub fn brisk_generate_options_init_sized(options: *mut brisk_generate_options, size: usize);
    pub fn brisk_generate(
        session: *mut brisk_session,
        sampler: *mut brisk_sampler,
        options: *const brisk_generate_options,
        n_generated: *mut usize,
        stop_reason: *mut brisk_stop_reason,
    ) -> brisk_status;

    // engines and sequences
    pub fn brisk_engine_options_init_sized(options: *mut brisk_engine_options, size: usize);
    pub fn brisk_engine_create(
        model: *const brisk_model,
        options: *const brisk_engine_options,
        out_engine: *mut *mut brisk_engine,
    ) -> brisk_status;
    pub fn brisk_engine_free(engine: *mut brisk_engine);
    pub fn brisk_engine_describe(
        engine: *const brisk_engine,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_engine_n_threads(engine: *const brisk_engine) -> u32;
    /// Added in ABI 0.4.
    pub fn brisk_physical_cores() -> u32;
    pub fn brisk_engine_step(engine: *mut brisk_engine, n_active: *mut u32) -> brisk_status;
    pub fn brisk_engine_read_bandwidth(
        engine: *mut brisk_engine,
        bytes: u64,
        passes: u32,
        out_median_gb_per_s: *mut f64,
        out_min_gb_per_s: *mut f64,
        out_max_gb_per_s: *mut f64,
    ) -> brisk_status;
    pub fn brisk_sequence_create(engine: *mut brisk_engine, out_sequence: *mut *mut brisk_sequence) -> brisk_status;
    pub fn brisk_sequence_fork(src: *const brisk_sequence, out_sequence: *mut *mut brisk_sequence) -> brisk_status;
    pub fn brisk_sequence_free(sequence: *mut brisk_sequence);
    pub fn brisk_sequence_add_tokens(
        sequence: *mut brisk_sequence,
        tokens: *const i32,
        n_tokens: usize,
    ) -> brisk_status;
    pub fn brisk_sequence_add_text(
        sequence: *mut brisk_sequence,
        text: *const c_char,
        len: usize,
        flags: u32,
    ) -> brisk_status;
    pub fn brisk_sequence_generate(
        sequence: *mut brisk_sequence,
        sampling: *const brisk_sampler_options,
        options: *const brisk_generate_options,
    ) -> brisk_status;
    pub fn brisk_sequence_get_state(sequence: *const brisk_sequence) -> brisk_sequence_state;
    pub fn brisk_sequence_stop_reason(sequence: *const brisk_sequence) -> brisk_stop_reason;
    pub fn brisk_sequence_position(sequence: *const brisk_sequence) -> u32;
    pub fn brisk_sequence_generated(
        sequence: *const brisk_sequence,
        tokens: *mut i32,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    /// Added in ABI 0.4.
    pub fn brisk_sequence_truncate(sequence: *mut brisk_sequence, position: u32) -> brisk_status;
    /// Added in ABI 0.4.
    pub fn brisk_engine_max_sequences(
        model: *const brisk_model,
        options: *const brisk_engine_options,
        out_n_seq: *mut u32,
    ) -> brisk_status;

    // saved state (save/load added in ABI 0.4, resume in 0.7)
    /// Added in ABI 0.4.
    pub fn brisk_model_identity(
        model: *const brisk_model,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_sequence_save_state(sequence: *const brisk_sequence, path: *const c_char) -> brisk_status;
    pub fn brisk_sequence_load_state(
        engine: *mut brisk_engine,
        path: *const c_char,
        out_sequence: *mut *mut brisk_sequence,
    ) -> brisk_status;
    pub fn brisk_sequence_resume(sequence: *mut brisk_sequence, options: *const brisk_generate_options)
        -> brisk_status;
    pub fn brisk_session_save_state(
        session: *const brisk_session,
        sampler: *const brisk_sampler,
        tokens: *const i32,
        n_tokens: usize,
        path: *const c_char,
    ) -> brisk_status;
    pub fn brisk_session_load_state(
        session: *mut brisk_session,
        sampler: *mut brisk_sampler,
        path: *const c_char,
    ) -> brisk_status;
    pub fn brisk_state_file_tokens(
        path: *const c_char,
        tokens: *mut i32,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;

    // synthetic models
    pub fn brisk_synthesize_options_init_sized(options: *mut brisk_synthesize_options, size: usize);
    pub fn brisk_synthesize_model(path: *const c_char, options: *const brisk_synthesize_options) -> brisk_status;
    pub fn brisk_model_open_synthetic(
        synth: *const brisk_synthesize_options,
        options: *const brisk_model_options,
        out_model: *mut *mut brisk_model,
    ) -> brisk_status;
    pub fn brisk_synthetic_shapes(buf: *mut c_char, cap: usize, needed: *mut usize) -> brisk_status;

}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_model_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_model_options`.
pub unsafe fn brisk_model_options_init(options: *mut brisk_model_options) {
    brisk_model_options_init_sized(options, core::mem::size_of::<brisk_model_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_session_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_session_options`.
pub unsafe fn brisk_session_options_init(options: *mut brisk_session_options) {
    brisk_session_options_init_sized(options, core::mem::size_of::<brisk_session_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_sampler_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_sampler_options`.
pub unsafe fn brisk_sampler_options_init(options: *mut brisk_sampler_options) {
    brisk_sampler_options_init_sized(options, core::mem::size_of::<brisk_sampler_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_generate_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_generate_options`.
pub unsafe fn brisk_generate_options_init(options: *mut brisk_generate_options) {
    brisk_generate_options_init_sized(options, core::mem::size_of::<brisk_generate_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_engine_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_engine_options`.
pub unsafe fn brisk_engine_options_init(options: *mut brisk_engine_options) {
    brisk_engine_options_init_sized(options, core::mem::size_of::<brisk_engine_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_chat_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_chat_options`.
pub unsafe fn brisk_chat_options_init(options: *mut brisk_chat_options) {
    brisk_chat_options_init_sized(options, core::mem::size_of::<brisk_chat_options>())
}

/// Defaults for the struct as this crate declares it (the C header's
/// `brisk_synthesize_options_init` macro does the same with `sizeof`).
///
/// # Safety
/// `options` must point to writable memory for a `brisk_synthesize_options`.
pub unsafe fn brisk_synthesize_options_init(options: *mut brisk_synthesize_options) {
    brisk_synthesize_options_init_sized(options, core::mem::size_of::<brisk_synthesize_options>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;
    use std::mem::{size_of, MaybeUninit};

    // The C init functions set struct_size = sizeof(the C struct): equal
    // sizes catch a field missing, added or of the wrong width here.
    macro_rules! same_size {
        ($t:ty, $init:ident) => {{
            let mut o = MaybeUninit::<$t>::zeroed();
            unsafe { $init(o.as_mut_ptr()) };
            let o = unsafe { o.assume_init() };
            assert_eq!(o.struct_size as usize, size_of::<$t>(), stringify!($t));
        }};
    }

    #[test]
    fn option_structs_match_the_header() {
        same_size!(brisk_model_options, brisk_model_options_init);
        same_size!(brisk_session_options, brisk_session_options_init);
        same_size!(brisk_sampler_options, brisk_sampler_options_init);
        same_size!(brisk_generate_options, brisk_generate_options_init);
        same_size!(brisk_engine_options, brisk_engine_options_init);
        same_size!(brisk_synthesize_options, brisk_synthesize_options_init);
        same_size!(brisk_chat_options, brisk_chat_options_init);
        same_size!(brisk_convert_options, brisk_convert_options_init);
        same_size!(brisk_verify_options, brisk_verify_options_init);
        same_size!(brisk_pack_options, brisk_pack_options_init);
        same_size!(brisk_quantize_options, brisk_quantize_options_init);
        same_size!(brisk_calibrate_options, brisk_calibrate_options_init);
        same_size!(brisk_ppl_options, brisk_ppl_options_init);
        same_size!(brisk_compare_options, brisk_compare_options_init);
    }

    #[test]
    fn defaults_and_versions() {
        unsafe {
            let mut s = MaybeUninit::<brisk_sampler_options>::zeroed();
            brisk_sampler_options_init(s.as_mut_ptr());
            let s = s.assume_init();
            assert!((s.temperature - 0.8).abs() < 1e-6 && s.top_k == 40 && s.repeat_last_n == 64);
            let mut e = MaybeUninit::<brisk_engine_options>::zeroed();
            brisk_engine_options_init(e.as_mut_ptr());
            let e = e.assume_init();
            assert!(e.n_seq_max == 8 && e.n_batch == 512 && e.cache_type_k == BRISK_TYPE_AUTO);
            assert_eq!(brisk_abi_version() >> 16, BRISK_ABI_VERSION_MAJOR);
            let mut h = MaybeUninit::<brisk_chat_options>::zeroed();
            brisk_chat_options_init(h.as_mut_ptr());
            let h = h.assume_init();
            assert!(h.template_name.is_null() && h.add_assistant == 1 && h.allow_control_tokens == 0);
            // Defaults at their offsets catch fields out of order.
            let mut p = MaybeUninit::<brisk_pack_options>::zeroed();
            brisk_pack_options_init(p.as_mut_ptr());
            let p = p.assume_init();
            assert!(p.level == 3 && p.long_distance == -1 && p.progress_fn.is_none());
            let mut q = MaybeUninit::<brisk_quantize_options>::zeroed();
            brisk_quantize_options_init(q.as_mut_ptr());
            let q = q.assume_init();
            assert_eq!(CStr::from_ptr(q.type_).to_str().unwrap(), "q8_0");
            assert!(q.report == 1 && q.target_size == 0 && q.calibration.is_null() && q.eval_file.is_null());
            let mut c = MaybeUninit::<brisk_calibrate_options>::zeroed();
            brisk_calibrate_options_init(c.as_mut_ptr());
            let c = c.assume_init();
            assert!((c.holdout - 0.1).abs() < 1e-6 && c.resume == 0 && c.data_paths.is_null());
            let mut k = MaybeUninit::<brisk_compare_options>::zeroed();
            brisk_compare_options_init(k.as_mut_ptr());
            let k = k.assume_init();
            assert!(k.n_predict == 64 && k.stop_at_eos == 1);
            let mut v = MaybeUninit::<brisk_convert_options>::zeroed();
            brisk_convert_options_init(v.as_mut_ptr());
            assert_eq!(v.assume_init().type_, BRISK_TYPE_AUTO);
            let mut l = MaybeUninit::<brisk_ppl_options>::zeroed();
            brisk_ppl_options_init(l.as_mut_ptr());
            let l = l.assume_init();
            assert!(l.max_chars < 0 && l.cache_type_k == BRISK_TYPE_AUTO && l.cache_type_v == BRISK_TYPE_AUTO);
            let mut d = MaybeUninit::<brisk_doctor_options>::zeroed();
            brisk_doctor_options_init(d.as_mut_ptr());
            let d = d.assume_init();
            assert!(d.root.is_null() && d.model_path.is_null() && d.load_seconds == 20.0 && d.measure == 1);
            assert!(d.progress_fn.is_none() && d.progress_user_data.is_null());
            let name = CStr::from_ptr(brisk_status_name(BRISK_ERR_CONTEXT_FULL));
            assert_eq!(name.to_str().unwrap(), "BRISK_ERR_CONTEXT_FULL");
        }
    }
}
