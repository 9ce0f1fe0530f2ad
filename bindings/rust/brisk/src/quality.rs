// SPDX-License-Identifier: MIT
// Quantization, calibration and the quality tools (perplexity, KL
// divergence, greedy comparison).
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;

use brisk_sys as sys;

use crate::error::{check, text_out, Result};
use crate::hooks::{run_hooked, Hooks};
use crate::model::{cstring, path_cstring, Model};
use crate::Type;

/// C strings and the array of pointers to them.
struct CStrings {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

impl CStrings {
    fn new<S: AsRef<[u8]>>(items: impl IntoIterator<Item = S>, what: &str) -> Result<CStrings> {
        let owned = items
            .into_iter()
            .map(|s| {
                CString::new(s.as_ref()).map_err(|_| crate::error::invalid(format!("{} contains a NUL byte", what)))
            })
            .collect::<Result<Vec<_>>>()?;
        let ptrs = owned.iter().map(|s| s.as_ptr()).collect();
        Ok(CStrings { _owned: owned, ptrs })
    }
    fn as_ptr(&self) -> *const *const c_char {
        if self.ptrs.is_empty() {
            ptr::null()
        } else {
            self.ptrs.as_ptr()
        }
    }
}

fn opt_path(p: &Option<PathBuf>) -> Result<Option<CString>> {
    p.as_deref().map(path_cstring).transpose()
}

fn ptr_of(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

// ---- quantize ---------------------------------------------------------------------

/// Settings of [`quantize`]; `Default` gives brisk's.
#[derive(Clone, Debug)]
pub struct QuantizeOptions {
    /// "q8_0", "q4_0", "q4_1", "q4_k_m", "q4_k_s", "q6_k", "f16", "bf16",
    /// "q4_k", "q5_k", "mixed-4-8".
    pub preset: String,
    /// Per-tensor overrides "REGEX=TYPE"; the first match wins.
    pub tensor_types: Vec<String>,
    /// 0: all cores.
    pub n_threads: u32,
    /// Statistics from [`calibrate`] (or a llama-imatrix GGUF). The targets
    /// and the evaluation need it.
    pub calibration: Option<PathBuf>,
    /// Bytes of the output file; each matrix's type is chosen to minimise
    /// the predicted damage within it. 0: off.
    pub target_size: u64,
    /// Bits per weight over all tensors, as a budget instead. 0: off.
    pub target_bpw: f64,
    /// Rank tensors by weighted error only, without measuring KL.
    pub sensitivity_proxy_only: bool,
    /// Calibration tokens for the KL measurement; 0: 1024.
    pub sensitivity_tokens: u32,
    /// Write OUT.report.md and OUT.report.json (with a calibration).
    pub report: bool,
    /// Evaluate on this text instead of the held-out split.
    pub eval_file: Option<PathBuf>,
    /// Evaluate on the calibration text (flagged in the report).
    pub eval_on_calib: bool,
    /// 0: 64; `u32::MAX`: all.
    pub eval_max_chunks: u32,
    /// The calibration data files (as given to [`calibrate`]) for the KL
    /// measurement and the held-out evaluation; they must hash as the
    /// statistics record (`Status::InvalidArgument` otherwise). Paths
    /// recorded in a statistics file are never opened on its word: with
    /// none, sensitivity falls back to weighted error and the report has no
    /// held-out figures.
    pub calibration_data: Vec<PathBuf>,
    /// Reading the input model (with a calibration it is opened twice, to
    /// run and to quantize): lock it in RAM (`Status::OutOfMemory` naming
    /// RLIMIT_MEMLOCK when the OS refuses).
    pub mlock: bool,
    /// Read the input model into anonymous memory instead of mapping it.
    pub no_mmap: bool,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_quantize_options_init);
        let preset = if c.type_.is_null() {
            String::new()
        } else {
            unsafe { std::ffi::CStr::from_ptr(c.type_) }.to_string_lossy().into_owned()
        };
        QuantizeOptions {
            preset,
            tensor_types: Vec::new(),
            n_threads: c.n_threads,
            calibration: None,
            target_size: c.target_size,
            target_bpw: c.target_bpw,
            sensitivity_proxy_only: c.sensitivity_proxy_only != 0,
            sensitivity_tokens: c.sensitivity_tokens,
            report: c.report != 0,
            eval_file: None,
            eval_on_calib: c.eval_on_calib != 0,
            eval_max_chunks: c.eval_max_chunks,
            calibration_data: Vec::new(),
            mlock: c.mlock != 0,
            no_mmap: c.no_mmap != 0,
        }
    }
}

/// Writes a quantized copy of a GGUF model (F32/F16/BF16 preferred),
/// atomically. Hooks: progress (stages "sensitivity", "quantize", "ppl"),
/// cancel, log, tensor.
pub fn quantize(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    options: &QuantizeOptions,
    hooks: Hooks<'_>,
) -> Result<()> {
    let (src, dst) = (path_cstring(input.as_ref())?, path_cstring(output.as_ref())?);
    let preset = if options.preset.is_empty() { None } else { Some(cstring(&options.preset, "preset")?) };
    let overrides = CStrings::new(&options.tensor_types, "tensor type")?;
    let calibration = opt_path(&options.calibration)?;
    let eval_file = opt_path(&options.eval_file)?;
    let calibration_data = CStrings::new(
        options.calibration_data.iter().map(|p| p.as_os_str().as_bytes()),
        "calibration data path",
    )?;
    let mut c = crate::init(sys::brisk_quantize_options_init);
    if preset.is_some() {
        c.type_ = ptr_of(&preset);
    }
    c.tensor_types = overrides.as_ptr();
    c.n_tensor_types = options.tensor_types.len();
    c.n_threads = options.n_threads;
    c.calibration = ptr_of(&calibration);
    c.target_size = options.target_size;
    c.target_bpw = options.target_bpw;
    c.sensitivity_proxy_only = options.sensitivity_proxy_only as i32;
    c.sensitivity_tokens = options.sensitivity_tokens;
    c.report = options.report as i32;
    c.eval_file = ptr_of(&eval_file);
    c.eval_on_calib = options.eval_on_calib as i32;
    c.eval_max_chunks = options.eval_max_chunks;
    c.calibration_data = calibration_data.as_ptr();
    c.n_calibration_data = options.calibration_data.len();
    c.mlock = options.mlock as i64;
    c.no_mmap = options.no_mmap as i64;
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        c.log_fn = t.log;
        c.log_user_data = t.user_data;
        c.tensor_fn = t.tensor;
        c.tensor_user_data = t.user_data;
        unsafe { sys::brisk_quantize(src.as_ptr(), dst.as_ptr(), &c) }
    })
}

// ---- calibrate ----------------------------------------------------------------------

/// Settings of [`calibrate`]; `Default` gives brisk's.
#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    /// The text field of JSONL records; `None`: "text".
    pub jsonl_field: Option<String>,
    /// Tokens per chunk; 0: min(training context, 512).
    pub n_ctx: u32,
    /// Token budget (evenly spaced chunks); 0: all.
    pub max_tokens: u64,
    /// Share of each file (its tail) kept out of the statistics.
    pub holdout: f32,
    /// Continue the partial file a cancelled run left at the output path.
    pub resume: bool,
    pub n_threads: u32,
    /// The partial file is saved this often; 0: 60.
    pub checkpoint_seconds: u32,
    /// Loading the model: lock it in RAM (`Status::OutOfMemory` naming
    /// RLIMIT_MEMLOCK when the OS refuses).
    pub mlock: bool,
    /// Read the model into anonymous memory instead of mapping it.
    pub no_mmap: bool,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_calibrate_options_init);
        CalibrateOptions {
            jsonl_field: None,
            n_ctx: c.n_ctx,
            max_tokens: c.max_tokens,
            holdout: c.holdout,
            resume: c.resume != 0,
            n_threads: c.n_threads,
            checkpoint_seconds: c.checkpoint_seconds,
            mlock: c.mlock != 0,
            no_mmap: c.no_mmap != 0,
        }
    }
}

/// Runs the model over `data` (text files, JSONL files or directories of
/// them) and writes activation statistics to `output`, for
/// [`QuantizeOptions::calibration`]. Cancelled, it saves what it has as a
/// partial file and fails with `Status::Cancelled`; `resume` continues it.
/// Hooks: progress (tokens), cancel, log.
pub fn calibrate<P: AsRef<Path>>(
    model: impl AsRef<Path>,
    output: impl AsRef<Path>,
    data: &[P],
    options: &CalibrateOptions,
    hooks: Hooks<'_>,
) -> Result<()> {
    let (src, dst) = (path_cstring(model.as_ref())?, path_cstring(output.as_ref())?);
    let paths = CStrings::new(data.iter().map(|p| p.as_ref().as_os_str().as_bytes()), "data path")?;
    let field = options.jsonl_field.as_deref().map(|f| cstring(f, "jsonl_field")).transpose()?;
    let mut c = crate::init(sys::brisk_calibrate_options_init);
    c.data_paths = paths.as_ptr();
    c.n_data_paths = data.len();
    if field.is_some() {
        c.jsonl_field = ptr_of(&field);
    }
    c.n_ctx = options.n_ctx;
    c.max_tokens = options.max_tokens;
    c.holdout = options.holdout;
    c.resume = options.resume as i32;
    c.n_threads = options.n_threads;
    c.checkpoint_seconds = options.checkpoint_seconds;
    c.mlock = options.mlock as i64;
    c.no_mmap = options.no_mmap as i64;
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        c.log_fn = t.log;
        c.log_user_data = t.user_data;
        unsafe { sys::brisk_calibrate(src.as_ptr(), dst.as_ptr(), &c) }
    })
}

// ---- perplexity -------------------------------------------------------------------

/// How [`Model::perplexity`] cuts the text into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunking {
    /// Tokenize with BOS, chunks of n_ctx, first token replaced by BOS
    /// (llama-perplexity).
    ReplaceBos,
    /// Tokenize without BOS, chunks of n_ctx-1 evaluated after a BOS.
    PrependBos,
}

/// Which predictions of a chunk are scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scoring {
    /// Positions n_ctx/2 .. n_ctx-2 (llama-perplexity).
    SecondHalf,
    /// Every prediction.
    All,
}

/// Settings of [`Model::perplexity`]; `Default` gives brisk's.
#[derive(Clone, Debug)]
pub struct PerplexityOptions {
    /// Tokens per chunk; 0: min(training context, 512).
    pub n_ctx: u32,
    /// 0: all.
    pub max_chunks: u32,
    pub chunking: Chunking,
    pub scoring: Scoring,
    /// Only the first N characters of the text; `None`: all.
    pub max_chars: Option<u64>,
    /// 0: one per physical core.
    pub n_threads: u32,
    /// With max_chunks, evenly spaced chunks over the whole text.
    pub spread_chunks: bool,
    /// The base model's log-probabilities: written when a base model is
    /// given, read in its place when it is not.
    pub base_cache: Option<PathBuf>,
    /// KV cache types of the evaluated model.
    pub cache_type_k: Type,
    pub cache_type_v: Type,
}

impl Default for PerplexityOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_ppl_options_init);
        PerplexityOptions {
            n_ctx: c.n_ctx,
            max_chunks: c.max_chunks,
            chunking: if c.chunking == sys::BRISK_PPL_CHUNK_PREPEND_BOS {
                Chunking::PrependBos
            } else {
                Chunking::ReplaceBos
            },
            scoring: if c.scoring == sys::BRISK_PPL_SCORE_ALL { Scoring::All } else { Scoring::SecondHalf },
            max_chars: if c.max_chars < 0 { None } else { Some(c.max_chars as u64) },
            n_threads: c.n_threads,
            spread_chunks: c.spread_chunks != 0,
            base_cache: None,
            cache_type_k: Type::from_code(c.cache_type_k).unwrap_or(Type::Auto),
            cache_type_v: Type::from_code(c.cache_type_v).unwrap_or(Type::Auto),
        }
    }
}

/// The figures of [`Model::perplexity`]; errors are standard errors, as
/// llama-perplexity prints them.
#[derive(Clone, Debug)]
pub struct Perplexity {
    pub ppl: f64,
    pub ppl_error: f64,
    pub mean_nll: f64,
    pub mean_nll_error: f64,
    pub chunks: u64,
    pub scored_tokens: u64,
    pub text_tokens: u64,
    /// Set when a base model (or base cache) was given.
    pub kl: Option<KlDivergence>,
    /// The whole result as brisk reports it (docs/calibration.md).
    pub json: String,
}

/// The model against its base, at every scored position.
#[derive(Clone, Debug)]
pub struct KlDivergence {
    pub base_ppl: f64,
    pub base_ppl_error: f64,
    /// Mean KL(base || model), nats per token.
    pub mean: f64,
    pub mean_error: f64,
    pub median: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
    /// How often both pick the same top token, in percent.
    pub same_top_pct: f64,
    pub same_top_error: f64,
    pub delta_ppl: f64,
    pub delta_ppl_error: f64,
    pub ln_ppl_ratio: f64,
    pub ln_ppl_ratio_error: f64,
}

/// Reads figures by name from a result (`get` is brisk_*_result_value).
fn values<const N: usize>(keys: [&str; N], mut get: impl FnMut(*const c_char, *mut f64) -> c_int) -> Result<[f64; N]> {
    let mut out = [0.0; N];
    for (k, v) in keys.iter().zip(out.iter_mut()) {
        let key = cstring(k, "key")?;
        check(get(key.as_ptr(), v))?;
    }
    Ok(out)
}

impl Model {
    /// The model's perplexity on `text`; with `base`, also the KL divergence
    /// from the base model, the same-top-token rate and the PPL difference.
    /// Hooks: progress (chunks), cancel.
    pub fn perplexity(
        &self,
        text: &str,
        base: Option<&Model>,
        options: &PerplexityOptions,
        hooks: Hooks<'_>,
    ) -> Result<Perplexity> {
        let cache = opt_path(&options.base_cache)?;
        let mut c = crate::init(sys::brisk_ppl_options_init);
        c.n_ctx = options.n_ctx;
        c.max_chunks = options.max_chunks;
        c.chunking = match options.chunking {
            Chunking::ReplaceBos => sys::BRISK_PPL_CHUNK_REPLACE_BOS,
            Chunking::PrependBos => sys::BRISK_PPL_CHUNK_PREPEND_BOS,
        };
        c.scoring = match options.scoring {
            Scoring::SecondHalf => sys::BRISK_PPL_SCORE_SECOND_HALF,
            Scoring::All => sys::BRISK_PPL_SCORE_ALL,
        };
        c.max_chars = options.max_chars.map_or(-1, |n| n.min(i64::MAX as u64) as i64);
        c.n_threads = options.n_threads;
        c.spread_chunks = options.spread_chunks as i32;
        c.base_cache = ptr_of(&cache);
        c.cache_type_k = options.cache_type_k.code();
        c.cache_type_v = options.cache_type_v.code();
        let mut res: *mut sys::brisk_ppl_result = ptr::null_mut();
        let base_ptr = base.map_or(ptr::null(), |b| b.raw());
        run_hooked(hooks, |t| {
            c.progress_fn = t.progress;
            c.progress_user_data = t.user_data;
            c.abort_fn = t.abort;
            c.abort_user_data = t.user_data;
            unsafe {
                sys::brisk_perplexity(self.raw(), base_ptr, text.as_ptr() as *const c_char, text.len(), &c, &mut res)
            }
        })?;
        struct Free(*mut sys::brisk_ppl_result);
        impl Drop for Free {
            fn drop(&mut self) {
                unsafe { sys::brisk_ppl_result_free(self.0) }
            }
        }
        let res = Free(res);
        let get = |k: *const c_char, v: *mut f64| unsafe { sys::brisk_ppl_result_value(res.0, k, v) };
        let [ppl, ppl_error, mean_nll, mean_nll_error, chunks, scored, tokens] =
            values(["ppl", "ppl_error", "mean_nll", "mean_nll_error", "chunks", "scored_tokens", "text_tokens"], get)?;
        let kl = if base.is_some() || options.base_cache.is_some() {
            let v = values(
                [
                    "base_ppl",
                    "base_ppl_error",
                    "kld_mean",
                    "kld_error",
                    "kld_median",
                    "kld_p99",
                    "kld_p99.9",
                    "kld_max",
                    "same_top_pct",
                    "same_top_error",
                    "delta_ppl",
                    "delta_ppl_error",
                    "ln_ppl_ratio",
                    "ln_ppl_ratio_error",
                ],
                get,
            )?;
            Some(KlDivergence {
                base_ppl: v[0],
                base_ppl_error: v[1],
                mean: v[2],
                mean_error: v[3],
                median: v[4],
                p99: v[5],
                p99_9: v[6],
                max: v[7],
                same_top_pct: v[8],
                same_top_error: v[9],
                delta_ppl: v[10],
                delta_ppl_error: v[11],
                ln_ppl_ratio: v[12],
                ln_ppl_ratio_error: v[13],
            })
        } else {
            None
        };
        let json = text_out(|buf, cap, needed| unsafe { sys::brisk_ppl_result_json(res.0, buf, cap, needed) })?;
        Ok(Perplexity {
            ppl,
            ppl_error,
            mean_nll,
            mean_nll_error,
            chunks: chunks as u64,
            scored_tokens: scored as u64,
            text_tokens: tokens as u64,
            kl,
            json,
        })
    }
}

// ---- compare ----------------------------------------------------------------------

/// Settings of [`compare`]; `Default` gives brisk's.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Tokens generated per prompt and model.
    pub n_predict: i32,
    /// 0: min(training context, 4096).
    pub n_ctx: u32,
    /// 0: one per physical core.
    pub n_threads: u32,
    pub stop_at_eos: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_compare_options_init);
        CompareOptions {
            n_predict: c.n_predict,
            n_ctx: c.n_ctx,
            n_threads: c.n_threads,
            stop_at_eos: c.stop_at_eos != 0,
        }
    }
}

/// The sum of [`compare`].
#[derive(Clone, Debug)]
pub struct Comparison {
    pub prompts: u64,
    /// Prompts whose greedy outputs are identical, in percent.
    pub identical_pct: f64,
    pub diverging: u64,
    /// Mean token index of the first difference over the diverging prompts.
    pub mean_first_divergence_token: f64,
    /// Per prompt: both texts and token ids and where they first differ.
    pub json: String,
}

/// Generates greedily from both models for each prompt (with BOS) and
/// compares the outputs. Hooks: progress (prompts), cancel.
pub fn compare(
    a: &Model,
    b: &Model,
    prompts: &[&str],
    options: &CompareOptions,
    hooks: Hooks<'_>,
) -> Result<Comparison> {
    let cprompts = CStrings::new(prompts, "prompt")?;
    let mut c = crate::init(sys::brisk_compare_options_init);
    c.n_predict = options.n_predict;
    c.n_ctx = options.n_ctx;
    c.n_threads = options.n_threads;
    c.stop_at_eos = options.stop_at_eos as i32;
    let mut res: *mut sys::brisk_compare_result = ptr::null_mut();
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        unsafe { sys::brisk_compare(a.raw(), b.raw(), cprompts.as_ptr(), prompts.len(), &c, &mut res) }
    })?;
    struct Free(*mut sys::brisk_compare_result);
    impl Drop for Free {
        fn drop(&mut self) {
            unsafe { sys::brisk_compare_result_free(self.0) }
        }
    }
    let res = Free(res);
    let [n, identical_pct, diverging, mean_first] =
        values(["prompts", "identical_pct", "diverging", "mean_first_divergence_token"], |k, v| unsafe {
            sys::brisk_compare_result_value(res.0, k, v)
        })?;
    let json = text_out(|buf, cap, needed| unsafe { sys::brisk_compare_result_json(res.0, buf, cap, needed) })?;
    Ok(Comparison {
        prompts: n as u64,
        identical_pct,
        diverging: diverging as u64,
        mean_first_divergence_token: mean_first,
        json,
    })
}
