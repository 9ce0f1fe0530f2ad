// SPDX-License-Identifier: MIT
use std::ffi::{CStr, CString};
use std::os::raw::c_char;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};

use brisk_sys as sys;

pub use crate::callback::LogFn;
use crate::callback::LogSlot;
use crate::engine::{Engine, EngineOptions};
use crate::error::{array_out, bytes_out, check, invalid, text_out, Result};
use crate::session::{Session, SessionOptions};
use crate::Token;

/// Severity of a log message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl LogLevel {
    pub(crate) fn from_code(code: i32) -> LogLevel {
        match code {
            sys::BRISK_LOG_ERROR => LogLevel::Error,
            sys::BRISK_LOG_WARN => LogLevel::Warn,
            sys::BRISK_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
    fn code(self) -> i32 {
        match self {
            LogLevel::Error => sys::BRISK_LOG_ERROR,
            LogLevel::Warn => sys::BRISK_LOG_WARN,
            LogLevel::Info => sys::BRISK_LOG_INFO,
            LogLevel::Debug => sys::BRISK_LOG_DEBUG,
        }
    }
}

/// How a model's matrix kernels are chosen (`brisk_plan_mode`);
/// [`Model::kernel_plan`] says which plan was used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanMode {
    /// `$BRISK_PLAN` (auto, fixed or measure) if set, else `Auto`.
    Default,
    /// The cached plan if valid, else measure and cache it.
    Auto,
    /// The instruction set's baseline kernels: reproducible, nothing measured.
    Fixed,
    /// Measure even if a plan is cached, then cache it (brisk tune).
    Measure,
}

impl PlanMode {
    /// Every mode this binding knows.
    pub const ALL: [PlanMode; 4] = [PlanMode::Default, PlanMode::Auto, PlanMode::Fixed, PlanMode::Measure];

    /// The C value (`brisk_plan_mode`).
    pub fn code(self) -> i32 {
        match self {
            PlanMode::Default => sys::BRISK_PLAN_DEFAULT,
            PlanMode::Auto => sys::BRISK_PLAN_AUTO,
            PlanMode::Fixed => sys::BRISK_PLAN_FIXED,
            PlanMode::Measure => sys::BRISK_PLAN_MEASURE,
        }
    }

    /// The mode of a C value; `None` for one this binding does not know.
    pub fn from_code(code: i64) -> Option<PlanMode> {
        PlanMode::ALL.into_iter().find(|m| i64::from(m.code()) == code)
    }
}

/// Tokenizer flags: combine with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u32);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// Tokenize: add BOS if the model asks for it. Detokenize: drop the
    /// space the tokenizer put after a leading BOS.
    pub const ADD_BOS: Flags = Flags(sys::BRISK_TOKENIZE_ADD_BOS);
    /// Recognise "<s>", "<|im_start|>"... in the text.
    pub const PARSE_SPECIAL: Flags = Flags(sys::BRISK_TOKENIZE_PARSE_SPECIAL);
    /// token_to_piece: give control tokens' text ("<s>").
    pub const PIECE_SPECIAL: Flags = Flags(sys::BRISK_PIECE_SPECIAL);
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// Settings of [`Model::open_with`]; `Default` gives brisk's defaults.
pub struct ModelOptions {
    /// Receives messages from loading; `None`: silent.
    pub log: Option<LogFn>,
    /// The most verbose level passed to `log`.
    pub log_level: LogLevel,
    /// Open for tokenizing only.
    pub vocab_only: bool,
    /// Recompute every checksum of the file's manifest before opening:
    /// `Status::Checksum` if something differs, `Status::NotFound` without
    /// a manifest. Reads the whole file once.
    pub verify: bool,
    /// Lock the model's pages in RAM so they are never paged out; when the
    /// OS refuses, `Status::OutOfMemory` with the RLIMIT_MEMLOCK numbers.
    pub mlock: bool,
    /// Read the file into anonymous memory instead of mapping it (network
    /// filesystems).
    pub no_mmap: bool,
    /// How the matrix kernels are chosen.
    pub plan_mode: PlanMode,
    /// Directory of cached kernel plans; `None`: `$BRISK_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/brisk`, else `~/.cache/brisk`.
    pub plan_cache_dir: Option<PathBuf>,
    /// Threads a plan is measured with; 0: one per physical core.
    pub plan_threads: u32,
}

impl Default for ModelOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_model_options_init);
        ModelOptions {
            log: None,
            log_level: LogLevel::from_code(c.log_level),
            vocab_only: c.vocab_only != 0,
            verify: c.verify != 0,
            mlock: c.mlock != 0,
            no_mmap: c.no_mmap != 0,
            plan_mode: PlanMode::from_code(c.plan_mode).unwrap_or(PlanMode::Default),
            plan_cache_dir: None,
            plan_threads: c.plan_threads.max(0) as u32,
        }
    }
}

impl ModelOptions {
    /// The C options, the plan cache directory they point to (keep it
    /// until the call has returned) and the log slot (null without a log).
    fn into_c(self) -> Result<(sys::brisk_model_options, Option<CString>, *mut LogSlot)> {
        let plan_cache_dir = self.plan_cache_dir.as_deref().map(path_cstring).transpose()?;
        let mut c = crate::init(sys::brisk_model_options_init);
        c.log_level = self.log_level.code();
        c.vocab_only = self.vocab_only as i32;
        c.verify = self.verify as i32;
        c.mlock = self.mlock as i64;
        c.no_mmap = self.no_mmap as i64;
        c.plan_mode = i64::from(self.plan_mode.code());
        c.plan_cache_dir = plan_cache_dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        c.plan_threads = i64::from(self.plan_threads);
        let mut slot = ptr::null_mut();
        if let Some(f) = self.log {
            slot = LogSlot::into_raw(f);
            c.log_fn = LogSlot::trampoline();
            c.log_user_data = slot as *mut _;
        }
        Ok((c, plan_cache_dir, slot))
    }
}

/// One message of a conversation for [`Model::chat_render`].
#[derive(Clone, Copy, Debug)]
pub struct ChatMessage<'a> {
    /// "system", "user" or "assistant".
    pub role: &'a str,
    pub content: &'a str,
}

/// Settings of [`Model::chat_render_with`]; `Default` gives brisk's
/// defaults (`brisk_chat_options_init`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatOptions {
    /// "llama2", "llama3", "chatml", "mistral" or "phi3"; `None`: the
    /// model's own (from its tokenizer.chat_template).
    pub template: Option<String>,
    /// Append the start of the assistant's reply.
    pub add_assistant: bool,
    /// Render control-token text in roles and contents as it is (it becomes
    /// control tokens when tokenized with `Flags::PARSE_SPECIAL`). Only for
    /// trusted text; `false` refuses it, as [`Model::chat_render`] does.
    pub allow_control_tokens: bool,
}

impl Default for ChatOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_chat_options_init);
        let template = if c.template_name.is_null() {
            None
        } else {
            Some(unsafe { CStr::from_ptr(c.template_name) }.to_string_lossy().into_owned())
        };
        ChatOptions { template, add_assistant: c.add_assistant != 0, allow_control_tokens: c.allow_control_tokens != 0 }
    }
}

/// The roles and contents of a conversation as arrays of C strings (which
/// `_owned` keeps alive).
struct ChatArrays {
    _owned: Vec<CString>,
    roles: Vec<*const c_char>,
    contents: Vec<*const c_char>,
}

impl ChatArrays {
    fn new(messages: &[ChatMessage]) -> Result<ChatArrays> {
        let mut owned = Vec::with_capacity(messages.len() * 2);
        for m in messages {
            owned.push(cstring(m.role, "role")?);
            owned.push(cstring(m.content, "content")?);
        }
        let roles = owned.iter().step_by(2).map(|s| s.as_ptr()).collect();
        let contents = owned.iter().skip(1).step_by(2).map(|s| s.as_ptr()).collect();
        Ok(ChatArrays { _owned: owned, roles, contents })
    }
}

pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| invalid(format!("{} contains a NUL byte", what)))
}

pub(crate) fn path_cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| invalid("path contains a NUL byte"))
}

/// An opened GGUF model: weights, tokenizer and metadata. Immutable, so it
/// is `Send + Sync`; sessions and engines borrow it.
pub struct Model {
    raw: NonNull<sys::brisk_model>,
    log: *mut LogSlot,
}

// brisk.h: every function taking a const brisk_model* may be called from any
// number of threads at once; the log closure is Send + Sync.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Model {
    /// Opens a GGUF model file with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Model> {
        Model::open_with(path, ModelOptions::default())
    }

    pub fn open_with(path: impl AsRef<Path>, options: ModelOptions) -> Result<Model> {
        let cpath = path_cstring(path.as_ref())?;
        let (c, _plan_cache_dir, slot) = options.into_c()?;
        let mut raw = ptr::null_mut();
        let r = check(unsafe { sys::brisk_model_open(cpath.as_ptr(), &c, &mut raw) });
        Model::finish_open(r, raw, slot)
    }

    /// Makes a model with random weights in memory (nothing is left on disk).
    pub fn open_synthetic(synth: &SynthesizeOptions, options: ModelOptions) -> Result<Model> {
        let s = synth.to_c()?;
        let (c, _plan_cache_dir, slot) = options.into_c()?;
        let mut raw = ptr::null_mut();
        let r = check(unsafe { sys::brisk_model_open_synthetic(&s.c, &c, &mut raw) });
        Model::finish_open(r, raw, slot)
    }

    fn finish_open(r: Result<()>, raw: *mut sys::brisk_model, slot: *mut LogSlot) -> Result<Model> {
        let model = match (r, NonNull::new(raw)) {
            (Ok(()), Some(raw)) => Ok(Model { raw, log: slot }),
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err(crate::Error::new(crate::Status::Internal, "brisk_model_open gave no model")),
        };
        if model.is_err() {
            // A panic in the log callback wins over the error.
            unsafe {
                LogSlot::rethrow(slot);
                LogSlot::free(slot);
            }
            return model;
        }
        unsafe { LogSlot::rethrow(slot) };
        model
    }

    pub(crate) fn raw(&self) -> *const sys::brisk_model {
        self.raw.as_ptr()
    }

    /// Vocabulary size.
    pub fn n_vocab(&self) -> usize {
        unsafe { sys::brisk_model_n_vocab(self.raw()) }.max(0) as usize
    }

    /// Context length the model was trained with.
    pub fn n_ctx_train(&self) -> usize {
        unsafe { sys::brisk_model_n_ctx_train(self.raw()) }.max(0) as usize
    }

    /// The beginning-of-sequence token, if the model has one.
    pub fn token_bos(&self) -> Option<Token> {
        let t = unsafe { sys::brisk_model_token_bos(self.raw()) };
        if t >= 0 {
            Some(t)
        } else {
            None
        }
    }

    /// The end-of-sequence token, if the model has one.
    pub fn token_eos(&self) -> Option<Token> {
        let t = unsafe { sys::brisk_model_token_eos(self.raw()) };
        if t >= 0 {
            Some(t)
        } else {
            None
        }
    }

    /// Size of the model file in bytes.
    pub fn file_size(&self) -> u64 {
        unsafe { sys::brisk_model_file_size(self.raw()) }
    }

    /// Bytes of weights one decode step reads (every matrix multiplied with,
    /// one embedding row, the norms): at B bytes/s of read bandwidth, at most
    /// B / this many steps per second.
    pub fn decode_bytes(&self) -> u64 {
        unsafe { sys::brisk_model_decode_bytes(self.raw()) }
    }

    /// One line such as "llama 5 layers, dim 64, vocab 512, f32, 1.2 MB".
    pub fn describe(&self) -> Result<String> {
        text_out(|buf, cap, needed| unsafe { sys::brisk_model_describe(self.raw(), buf, cap, needed) })
    }

    /// The kernel plan in use, as text: where it came from, then the layout
    /// and kernel of each weight type and column class.
    pub fn kernel_plan(&self) -> Result<String> {
        text_out(|buf, cap, needed| unsafe { sys::brisk_model_kernel_plan(self.raw(), buf, cap, needed) })
    }

    /// The type most matrix bytes are stored in, e.g. "q4_0".
    pub fn weight_type(&self) -> Result<String> {
        text_out(|buf, cap, needed| unsafe { sys::brisk_model_weight_type(self.raw(), buf, cap, needed) })
    }

    /// A metadata value as text; `Status::NotFound` if the key is absent.
    pub fn meta(&self, key: &str) -> Result<String> {
        let key = cstring(key, "key")?;
        text_out(|buf, cap, needed| unsafe { sys::brisk_model_meta(self.raw(), key.as_ptr(), buf, cap, needed) })
    }

    /// UTF-8 text to token ids.
    pub fn tokenize(&self, text: &str, flags: Flags) -> Result<Vec<Token>> {
        array_out(text.len() + 2, |buf, cap, needed| unsafe {
            sys::brisk_tokenize(self.raw(), text.as_ptr() as *const c_char, text.len(), flags.0, buf, cap, needed)
        })
    }

    /// The raw bytes of one token (possibly part of a UTF-8 character).
    pub fn token_to_piece(&self, token: Token, flags: Flags) -> Result<Vec<u8>> {
        bytes_out(|buf, cap, needed| unsafe { sys::brisk_token_to_piece(self.raw(), token, flags.0, buf, cap, needed) })
    }

    /// Token ids to text (invalid UTF-8 becomes U+FFFD; see
    /// [`Model::detokenize_bytes`] for the raw bytes).
    pub fn detokenize(&self, tokens: &[Token], flags: Flags) -> Result<String> {
        let bytes = self.detokenize_bytes(tokens, flags)?;
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    pub fn detokenize_bytes(&self, tokens: &[Token], flags: Flags) -> Result<Vec<u8>> {
        bytes_out(|buf, cap, needed| unsafe {
            sys::brisk_detokenize(self.raw(), tokens.as_ptr(), tokens.len(), flags.0, buf, cap, needed)
        })
    }

    /// Renders a conversation in a chat format: the model's own (from its
    /// tokenizer.chat_template) when `template` is `None`, else "llama2",
    /// "llama3", "chatml", "mistral" or "phi3". Tokenize the result with
    /// `Flags::ADD_BOS | Flags::PARSE_SPECIAL`. A role or content holding a
    /// control token's text is refused (`Status::InvalidArgument`); see
    /// [`Model::chat_render_with`].
    pub fn chat_render(&self, template: Option<&str>, messages: &[ChatMessage], add_assistant: bool) -> Result<String> {
        let template = template.map(|t| cstring(t, "template name")).transpose()?;
        let arrays = ChatArrays::new(messages)?;
        let tmpl = template.as_ref().map_or(ptr::null(), |t| t.as_ptr());
        text_out(|buf, cap, needed| unsafe {
            sys::brisk_chat_render(
                self.raw(),
                tmpl,
                arrays.roles.as_ptr(),
                arrays.contents.as_ptr(),
                messages.len(),
                add_assistant as i32,
                buf,
                cap,
                needed,
            )
        })
    }

    /// [`Model::chat_render`] with options (`brisk_chat_render_ex`).
    pub fn chat_render_with(&self, messages: &[ChatMessage], options: &ChatOptions) -> Result<String> {
        let template = options.template.as_deref().map(|t| cstring(t, "template name")).transpose()?;
        let mut c = crate::init(sys::brisk_chat_options_init);
        c.template_name = template.as_ref().map_or(ptr::null(), |t| t.as_ptr());
        c.add_assistant = options.add_assistant as i32;
        c.allow_control_tokens = options.allow_control_tokens as i32;
        let arrays = ChatArrays::new(messages)?;
        text_out(|buf, cap, needed| unsafe {
            sys::brisk_chat_render_ex(
                self.raw(),
                arrays.roles.as_ptr(),
                arrays.contents.as_ptr(),
                messages.len(),
                &c,
                buf,
                cap,
                needed,
            )
        })
    }

    /// The model file's identity, 32 hex digits (an XXH3-128 of its header,
    /// size and sampled tensor data): saved states are tied to it.
    pub fn identity(&self) -> Result<String> {
        text_out(|buf, cap, needed| unsafe { sys::brisk_model_identity(self.raw(), buf, cap, needed) })
    }

    /// The most sequences (at most `options.n_seq_max`) an engine with these
    /// options could hold within its memory budget, as [`Model::engine`]
    /// plans it; 0 if not even one fits. Nothing is allocated (and
    /// `options.abort` is not used).
    pub fn max_sequences(&self, options: &EngineOptions) -> Result<u32> {
        let (c, _cpu_list) = options.to_c()?;
        let mut n = 0u32;
        check(unsafe { sys::brisk_engine_max_sequences(self.raw(), &c, &mut n) })?;
        Ok(n)
    }

    /// A session (one sequence with its own KV cache) on this model.
    pub fn session(&self, options: SessionOptions) -> Result<Session<'_>> {
        Session::new(self, options)
    }

    /// An engine (many sequences per weight read) on this model.
    pub fn engine(&self, options: EngineOptions) -> Result<Engine<'_>> {
        Engine::new(self, options)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // Sessions and engines borrow the model, so none is left.
        unsafe {
            sys::brisk_model_close(self.raw.as_ptr());
            LogSlot::free(self.log);
        }
    }
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("description", &self.describe().unwrap_or_default()).finish()
    }
}

/// Shape and weights of a synthetic model; `Default` gives brisk's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthesizeOptions {
    /// One of [`synthetic_shapes`].
    pub shape: String,
    /// "q4_0", "q8_0", "q4_k", "f16", ...
    pub weight_type: String,
    pub seed: u64,
    /// 0: all cores.
    pub n_threads: u32,
}

impl Default for SynthesizeOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_synthesize_options_init);
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        SynthesizeOptions {
            shape: text(c.shape),
            weight_type: text(c.weight_type),
            seed: c.seed,
            n_threads: c.n_threads,
        }
    }
}

struct CSynth {
    c: sys::brisk_synthesize_options,
    _strings: (CString, CString),
}

impl SynthesizeOptions {
    fn to_c(&self) -> Result<CSynth> {
        let shape = cstring(&self.shape, "shape")?;
        let wtype = cstring(&self.weight_type, "weight type")?;
        let mut c = crate::init(sys::brisk_synthesize_options_init);
        c.shape = shape.as_ptr();
        c.weight_type = wtype.as_ptr();
        c.seed = self.seed;
        c.n_threads = self.n_threads;
        Ok(CSynth { c, _strings: (shape, wtype) })
    }
}

/// Writes a synthetic GGUF model to `path`.
pub fn synthesize_model(path: impl AsRef<Path>, options: &SynthesizeOptions) -> Result<()> {
    let cpath = path_cstring(path.as_ref())?;
    let s = options.to_c()?;
    check(unsafe { sys::brisk_synthesize_model(cpath.as_ptr(), &s.c) })
}

/// The built-in synthetic shape names.
pub fn synthetic_shapes() -> Result<Vec<String>> {
    let s = text_out(|buf, cap, needed| unsafe { sys::brisk_synthetic_shapes(buf, cap, needed) })?;
    Ok(s.split(',').filter(|x| !x.is_empty()).map(str::to_string).collect())
}
