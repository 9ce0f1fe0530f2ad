// SPDX-License-Identifier: MIT
//! The toolchain part of brisk.h: conversion, checksums, bundles,
//! quantization, calibration, perplexity and comparison; and the system
//! checks of `brisk doctor` (brisk_experimental.h).
use std::os::raw::{c_char, c_void};

use crate::*;

// ---- conversion, checksums and bundles --------------------------------------------
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_convert_options {
    pub struct_size: u32,
    pub type_: brisk_type,
    pub name: *const c_char,
    pub n_threads: u32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub log_fn: brisk_log_fn,
    pub log_user_data: *mut c_void,
    /// Added in ABI 0.6: lock the input in RAM (mlock) while it is read.
    pub mlock: i64,
    /// Added in ABI 0.6: read the input into memory instead of mapping it.
    pub no_mmap: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_verify_options {
    pub struct_size: u32,
    pub n_threads: u32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub mismatch_fn: brisk_mismatch_fn,
    pub mismatch_user_data: *mut c_void,
    /// Added in ABI 0.6: lock the input in RAM (mlock) while it is read.
    pub mlock: i64,
    /// Added in ABI 0.6: read the input into memory instead of mapping it.
    pub no_mmap: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_pack_options {
    pub struct_size: u32,
    pub level: i32,
    pub long_distance: i32,
    pub n_threads: u32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub log_fn: brisk_log_fn,
    pub log_user_data: *mut c_void,
    /// Added in ABI 0.6: lock the input in RAM (mlock) while it is read.
    pub mlock: i64,
    /// Added in ABI 0.6: read the input into memory instead of mapping it.
    pub no_mmap: i64,
}

// ---- quantization, calibration and quality ------------------------------------------
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_quantize_options {
    pub struct_size: u32,
    pub type_: *const c_char,
    pub tensor_types: *const *const c_char,
    pub n_tensor_types: usize,
    pub n_threads: u32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub log_fn: brisk_log_fn,
    pub log_user_data: *mut c_void,
    pub tensor_fn: brisk_quantize_tensor_fn,
    pub tensor_user_data: *mut c_void,
    pub calibration: *const c_char,
    pub target_size: u64,
    pub target_bpw: f64,
    pub sensitivity_proxy_only: i32,
    pub sensitivity_tokens: u32,
    pub report: i32,
    pub eval_file: *const c_char,
    pub eval_on_calib: i32,
    pub eval_max_chunks: u32,
    /// Added in ABI 0.4.
    pub calibration_data: *const *const c_char,
    pub n_calibration_data: usize,
    /// Added in ABI 0.6: lock the input in RAM (mlock) while it is read.
    pub mlock: i64,
    /// Added in ABI 0.6: read the input into memory instead of mapping it.
    pub no_mmap: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_calibrate_options {
    pub struct_size: u32,
    pub data_paths: *const *const c_char,
    pub n_data_paths: usize,
    pub jsonl_field: *const c_char,
    pub n_ctx: u32,
    pub max_tokens: u64,
    pub holdout: f32,
    pub resume: i32,
    pub n_threads: u32,
    pub checkpoint_seconds: u32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub log_fn: brisk_log_fn,
    pub log_user_data: *mut c_void,
    /// Added in ABI 0.6: lock the input in RAM (mlock) while it is read.
    pub mlock: i64,
    /// Added in ABI 0.6: read the input into memory instead of mapping it.
    pub no_mmap: i64,
}

pub const BRISK_PPL_CHUNK_REPLACE_BOS: i32 = 0;
pub const BRISK_PPL_CHUNK_PREPEND_BOS: i32 = 1;
pub const BRISK_PPL_SCORE_SECOND_HALF: i32 = 0;
pub const BRISK_PPL_SCORE_ALL: i32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_ppl_options {
    pub struct_size: u32,
    pub n_ctx: u32,
    pub max_chunks: u32,
    pub chunking: i32,
    pub scoring: i32,
    pub max_chars: i64,
    pub n_threads: u32,
    pub spread_chunks: i32,
    pub base_cache: *const c_char,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
    pub cache_type_k: i32,
    pub cache_type_v: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_compare_options {
    pub struct_size: u32,
    pub n_predict: i32,
    pub n_ctx: u32,
    pub n_threads: u32,
    pub stop_at_eos: i32,
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
    pub abort_fn: brisk_abort_fn,
    pub abort_user_data: *mut c_void,
}

// ---- system checks (`brisk doctor`): brisk_experimental.h, added in ABI 0.4 ----------
/// Experimental (brisk_experimental.h): may change in any release.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct brisk_doctor_options {
    pub struct_size: u32,
    /// Prefix for every /proc and /sys read; null or "": this machine.
    pub root: *const c_char,
    /// A model to check; null: none.
    pub model_path: *const c_char,
    pub n_threads: u32,
    /// Seconds of sustained load in the throttling test; 0 skips it.
    pub load_seconds: f64,
    /// Non-zero: also measure (bandwidth, the model's read speed,
    /// throttling, AMX permission); 0: only read files.
    pub measure: i32,
    /// Stage "doctor", units: seconds of load.
    pub progress_fn: brisk_progress_fn,
    pub progress_user_data: *mut c_void,
}

extern "C" {
    // conversion, checksums and bundles
    pub fn brisk_convert_options_init_sized(options: *mut brisk_convert_options, size: usize);
    pub fn brisk_convert_hf(
        hf_dir: *const c_char,
        out_path: *const c_char,
        options: *const brisk_convert_options,
    ) -> brisk_status;
    pub fn brisk_convert_llama2c(
        model_path: *const c_char,
        tokenizer_path: *const c_char,
        out_path: *const c_char,
        options: *const brisk_convert_options,
    ) -> brisk_status;
    pub fn brisk_verify_options_init_sized(options: *mut brisk_verify_options, size: usize);
    pub fn brisk_verify(
        path: *const c_char,
        options: *const brisk_verify_options,
        bytes_checked: *mut u64,
    ) -> brisk_status;
    pub fn brisk_add_manifest(
        path: *const c_char,
        out_path: *const c_char,
        options: *const brisk_verify_options,
    ) -> brisk_status;
    pub fn brisk_pack_options_init_sized(options: *mut brisk_pack_options, size: usize);
    pub fn brisk_pack(
        gguf_path: *const c_char,
        bundle_path: *const c_char,
        options: *const brisk_pack_options,
    ) -> brisk_status;
    pub fn brisk_unpack(
        bundle_path: *const c_char,
        gguf_path: *const c_char,
        options: *const brisk_pack_options,
    ) -> brisk_status;

    // quantization and calibration
    pub fn brisk_quantize_options_init_sized(options: *mut brisk_quantize_options, size: usize);
    pub fn brisk_quantize(
        input_path: *const c_char,
        output_path: *const c_char,
        options: *const brisk_quantize_options,
    ) -> brisk_status;
    pub fn brisk_calibrate_options_init_sized(options: *mut brisk_calibrate_options, size: usize);
    pub fn brisk_calibrate(
        model_path: *const c_char,
        output_path: *const c_char,
        options: *const brisk_calibrate_options,
    ) -> brisk_status;

    // perplexity and comparison (the results' keyed accessors are experimental)
    pub fn brisk_ppl_options_init_sized(options: *mut brisk_ppl_options, size: usize);
    pub fn brisk_perplexity(
        model: *const brisk_model,
        base_model: *const brisk_model,
        text: *const c_char,
        len: usize,
        options: *const brisk_ppl_options,
        out_result: *mut *mut brisk_ppl_result,
    ) -> brisk_status;
    pub fn brisk_ppl_result_value(
        result: *const brisk_ppl_result,
        key: *const c_char,
        out_value: *mut f64,
    ) -> brisk_status;
    pub fn brisk_ppl_result_json(
        result: *const brisk_ppl_result,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_ppl_result_free(result: *mut brisk_ppl_result);
    pub fn brisk_compare_options_init_sized(options: *mut brisk_compare_options, size: usize);
    pub fn brisk_compare(
        model_a: *const brisk_model,
        model_b: *const brisk_model,
        prompts: *const *const c_char,
        n_prompts: usize,
        options: *const brisk_compare_options,
        out_result: *mut *mut brisk_compare_result,
    ) -> brisk_status;
    pub fn brisk_compare_result_value(
        result: *const brisk_compare_result,
        key: *const c_char,
        out_value: *mut f64,
    ) -> brisk_status;
    pub fn brisk_compare_result_json(
        result: *const brisk_compare_result,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_compare_result_free(result: *mut brisk_compare_result);

    // system checks (experimental)
    pub fn brisk_doctor_options_init_sized(options: *mut brisk_doctor_options, size: usize);
    pub fn brisk_doctor_run(
        options: *const brisk_doctor_options,
        out_report: *mut *mut brisk_doctor_report,
    ) -> brisk_status;
    pub fn brisk_doctor_report_json(
        report: *const brisk_doctor_report,
        buf: *mut c_char,
        cap: usize,
        needed: *mut usize,
    ) -> brisk_status;
    pub fn brisk_doctor_report_free(report: *mut brisk_doctor_report);
}

macro_rules! options_init {
    ($($init:ident($t:ty) => $sized:ident;)*) => {$(
        /// Defaults for the struct as this crate declares it (the C header's
        /// macro of the same name does the same with `sizeof`).
        ///
        /// # Safety
        /// `options` must point to writable memory for the struct.
        pub unsafe fn $init(options: *mut $t) {
            $sized(options, core::mem::size_of::<$t>())
        }
    )*};
}
options_init! {
    brisk_convert_options_init(brisk_convert_options) => brisk_convert_options_init_sized;
    brisk_verify_options_init(brisk_verify_options) => brisk_verify_options_init_sized;
    brisk_pack_options_init(brisk_pack_options) => brisk_pack_options_init_sized;
    brisk_quantize_options_init(brisk_quantize_options) => brisk_quantize_options_init_sized;
    brisk_calibrate_options_init(brisk_calibrate_options) => brisk_calibrate_options_init_sized;
    brisk_ppl_options_init(brisk_ppl_options) => brisk_ppl_options_init_sized;
    brisk_compare_options_init(brisk_compare_options) => brisk_compare_options_init_sized;
    brisk_doctor_options_init(brisk_doctor_options) => brisk_doctor_options_init_sized;
}
