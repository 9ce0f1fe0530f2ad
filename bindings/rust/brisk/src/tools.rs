// SPDX-License-Identifier: MIT
// The file toolchain: converting checkpoints to GGUF, checksum manifests,
// verifying, and .brisk bundles. Outputs are written atomically: a failed
// or cancelled call leaves no partial file.
use std::ffi::CString;
use std::path::Path;
use std::ptr;

use brisk_sys as sys;

use crate::error::Result;
use crate::hooks::{run_hooked, Hooks};
use crate::model::{cstring, path_cstring};
use crate::Type;


// ---- convert ---------------------------------------------------------------------

/// Settings of [`convert_hf`] and [`convert_llama2c`]; `Default` gives brisk's.
#[derive(Clone, Debug)]
pub struct ConvertOptions {
    /// Type of the matrices (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4K, Q5K,
    /// Q6K); `Type::Auto`: the source's float type.
    pub ty: Type,
    /// general.name; `None`: the directory's name (Hugging Face) or "llama".
    pub name: Option<String>,
    /// 0: all cores.
    pub n_threads: u32,
    /// Reading the input: lock it in RAM (`Status::OutOfMemory` naming
    /// RLIMIT_MEMLOCK when the OS refuses).
    pub mlock: bool,
    /// Read the input into anonymous memory instead of mapping it (network
    /// filesystems).
    pub no_mmap: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_convert_options_init);
        ConvertOptions {
            ty: Type::from_code(c.type_).unwrap_or(Type::Auto),
            name: None,
            n_threads: c.n_threads,
            mlock: c.mlock != 0,
            no_mmap: c.no_mmap != 0,
        }
    }
}

fn convert(
    options: &ConvertOptions,
    hooks: Hooks<'_>,
    f: impl FnOnce(&sys::brisk_convert_options) -> sys::brisk_status,
) -> Result<()> {
    let name = options.name.as_deref().map(|n| cstring(n, "name")).transpose()?;
    let mut c = crate::init(sys::brisk_convert_options_init);
    c.type_ = options.ty.code();
    c.name = name.as_ref().map_or(ptr::null(), |n| n.as_ptr());
    c.n_threads = options.n_threads;
    c.mlock = options.mlock as i64;
    c.no_mmap = options.no_mmap as i64;
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        c.log_fn = t.log;
        c.log_user_data = t.user_data;
        f(&c)
    })
}

/// Converts a Hugging Face model directory (config.json, safetensors,
/// tokenizer.json; Llama, Mistral, Qwen2) to a GGUF file with a checksum
/// manifest. Hooks: progress, cancel, log.
pub fn convert_hf(
    hf_dir: impl AsRef<Path>,
    out: impl AsRef<Path>,
    options: &ConvertOptions,
    hooks: Hooks<'_>,
) -> Result<()> {
    let (dir, out) = (path_cstring(hf_dir.as_ref())?, path_cstring(out.as_ref())?);
    convert(options, hooks, |c| unsafe { sys::brisk_convert_hf(dir.as_ptr(), out.as_ptr(), c) })
}

/// Converts a llama2.c checkpoint (legacy version-0 .bin) and its tokenizer
/// .bin to a GGUF file. Hooks: progress, cancel, log.
pub fn convert_llama2c(
    model: impl AsRef<Path>,
    tokenizer: impl AsRef<Path>,
    out: impl AsRef<Path>,
    options: &ConvertOptions,
    hooks: Hooks<'_>,
) -> Result<()> {
    let model = path_cstring(model.as_ref())?;
    let tokenizer = path_cstring(tokenizer.as_ref())?;
    let out = path_cstring(out.as_ref())?;
    convert(options, hooks, |c| unsafe {
        sys::brisk_convert_llama2c(model.as_ptr(), tokenizer.as_ptr(), out.as_ptr(), c)
    })
}

// ---- verify and manifests ------------------------------------------------------

/// Settings of [`verify`] and [`add_manifest`].
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// 0: all cores.
    pub n_threads: u32,
    /// Reading a GGUF (a bundle is streamed and ignores these): lock it in
    /// RAM (`Status::OutOfMemory` naming RLIMIT_MEMLOCK when the OS refuses).
    pub mlock: bool,
    /// Read a GGUF into anonymous memory instead of mapping it.
    pub no_mmap: bool,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_verify_options_init);
        VerifyOptions { n_threads: c.n_threads, mlock: c.mlock != 0, no_mmap: c.no_mmap != 0 }
    }
}

fn verify_call(
    options: &VerifyOptions,
    hooks: Hooks<'_>,
    f: impl FnOnce(&sys::brisk_verify_options) -> sys::brisk_status,
) -> Result<()> {
    let mut c = crate::init(sys::brisk_verify_options_init);
    c.n_threads = options.n_threads;
    c.mlock = options.mlock as i64;
    c.no_mmap = options.no_mmap as i64;
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        c.mismatch_fn = t.mismatch;
        c.mismatch_user_data = t.user_data;
        f(&c)
    })
}

/// Recomputes the checksums of a GGUF file (against its embedded manifest)
/// or of a .brisk bundle; returns the number of bytes hashed. A difference:
/// `Status::Checksum` (each one goes to the mismatch hook first); a GGUF
/// without a manifest: `Status::NotFound`. Hooks: progress, cancel, mismatch.
pub fn verify(path: impl AsRef<Path>, options: &VerifyOptions, hooks: Hooks<'_>) -> Result<u64> {
    let path = path_cstring(path.as_ref())?;
    let mut n = 0u64;
    verify_call(options, hooks, |c| unsafe { sys::brisk_verify(path.as_ptr(), c, &mut n) })?;
    Ok(n)
}

/// Rewrites a GGUF with a fresh checksum manifest to `out` (`None`: in
/// place). A file whose existing manifest does not verify is refused
/// (`Status::Checksum`). Hooks: progress, cancel.
pub fn add_manifest(
    path: impl AsRef<Path>,
    out: Option<&Path>,
    options: &VerifyOptions,
    hooks: Hooks<'_>,
) -> Result<()> {
    let path = path_cstring(path.as_ref())?;
    let out: Option<CString> = out.map(path_cstring).transpose()?;
    verify_call(options, hooks, |c| unsafe {
        sys::brisk_add_manifest(path.as_ptr(), out.as_ref().map_or(ptr::null(), |o| o.as_ptr()), c)
    })
}

// ---- bundles ---------------------------------------------------------------------

/// Settings of [`pack`] and [`unpack`].
#[derive(Clone, Debug)]
pub struct PackOptions {
    /// zstd level, 1..22.
    pub level: i32,
    /// zstd long-distance matching; `None`: automatic.
    pub long_distance: Option<bool>,
    /// 0: all cores.
    pub n_threads: u32,
    /// Reading the GGUF [`pack`] compresses: lock it in RAM
    /// (`Status::OutOfMemory` naming RLIMIT_MEMLOCK when the OS refuses).
    pub mlock: bool,
    /// Read that GGUF into anonymous memory instead of mapping it.
    pub no_mmap: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_pack_options_init);
        let long_distance = if c.long_distance < 0 { None } else { Some(c.long_distance != 0) };
        PackOptions { level: c.level, long_distance, n_threads: c.n_threads, mlock: c.mlock != 0, no_mmap: c.no_mmap != 0 }
    }
}

fn pack_call(
    options: &PackOptions,
    hooks: Hooks<'_>,
    f: impl FnOnce(&sys::brisk_pack_options) -> sys::brisk_status,
) -> Result<()> {
    let mut c = crate::init(sys::brisk_pack_options_init);
    c.level = options.level;
    c.long_distance = options.long_distance.map_or(-1, |on| on as i32);
    c.n_threads = options.n_threads;
    c.mlock = options.mlock as i64;
    c.no_mmap = options.no_mmap as i64;
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress;
        c.progress_user_data = t.user_data;
        c.abort_fn = t.abort;
        c.abort_user_data = t.user_data;
        c.log_fn = t.log;
        c.log_user_data = t.user_data;
        f(&c)
    })
}

/// Compresses a GGUF into a .brisk bundle. A GGUF with a manifest is
/// verified first (`Status::Checksum` if damaged). Hooks: progress, cancel, log.
pub fn pack(gguf: impl AsRef<Path>, bundle: impl AsRef<Path>, options: &PackOptions, hooks: Hooks<'_>) -> Result<()> {
    let (src, dst) = (path_cstring(gguf.as_ref())?, path_cstring(bundle.as_ref())?);
    pack_call(options, hooks, |c| unsafe { sys::brisk_pack(src.as_ptr(), dst.as_ptr(), c) })
}

/// Decompresses a bundle, verifying every checksum as it streams; the GGUF
/// appears only if all of them match (`Status::Checksum` or
/// `Status::BadFormat` otherwise). `level` and `long_distance` are not used.
/// Hooks: progress, cancel, log.
pub fn unpack(bundle: impl AsRef<Path>, gguf: impl AsRef<Path>, options: &PackOptions, hooks: Hooks<'_>) -> Result<()> {
    let (src, dst) = (path_cstring(bundle.as_ref())?, path_cstring(gguf.as_ref())?);
    pack_call(options, hooks, |c| unsafe { sys::brisk_unpack(src.as_ptr(), dst.as_ptr(), c) })
}
