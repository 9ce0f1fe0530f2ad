// SPDX-License-Identifier: MIT
// The system checks of `brisk doctor` (brisk_doctor_* of
// brisk_experimental.h): experimental, like the header they come from.
use std::path::PathBuf;
use std::ptr;

use brisk_sys as sys;

use crate::error::{text_out, Result};
use crate::hooks::{run_hooked, Hooks};
use crate::model::path_cstring;

/// Settings of [`doctor`]; `Default` gives brisk's.
///
/// Experimental (`brisk_experimental.h`): may change in any release.
#[derive(Clone, Debug)]
pub struct DoctorOptions {
    /// Prefix for every /proc and /sys read (`/tmp/fake` reads
    /// `/tmp/fake/proc/meminfo`); `None`: this machine.
    pub root: Option<PathBuf>,
    /// A model to check (memory plan, disk, read speed); `None`: none. A
    /// model that cannot be opened is a failed "model" check in the report,
    /// not an error.
    pub model_path: Option<PathBuf>,
    /// Threads for the measurements; 0: brisk's default.
    pub n_threads: u32,
    /// Seconds of sustained load in the throttling test (default 20, at
    /// most 3600); 0 skips it.
    pub load_seconds: f64,
    /// `true` (the default): also measure memory bandwidth, the model's
    /// read speed and throttling, and ask the OS for AMX; `false`: only
    /// read files.
    pub measure: bool,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        let c = crate::init(sys::brisk_doctor_options_init);
        DoctorOptions {
            root: None,
            model_path: None,
            n_threads: c.n_threads,
            load_seconds: c.load_seconds,
            measure: c.measure != 0,
        }
    }
}

/// Runs the system checks of `brisk doctor` (CPU and kernels, cores and
/// cgroup quota, governor, turbo, memory, swap, transparent huge pages, the
/// model's disk and, with `measure`, memory bandwidth, the model's read
/// speed and throttling under load) and returns the report as JSON text:
///
/// ```text
/// {"threads": 8, "checks": [{"check": "cpu", "status": "ok", "value": "...", "advice": ""}, ...],
///  "ok": 9, "warn": 1, "fail": 0, "info": 2}
/// ```
///
/// `threads` is the `-t` brisk chooses; each check's `status` is "ok",
/// "warn", "fail" or "info", and `advice` says what to do ("" when
/// nothing); `ok`, `warn`, `fail` and `info` count the checks. This crate
/// has no JSON parser (it depends on no outside crates), so the text is
/// returned as brisk gives it; parse it with the JSON library of your
/// choice. A failed check is part of the report, not an error.
///
/// Hooks: progress (stage "doctor", seconds of the load test) and cancel,
/// both polled only during the load test (brisk_doctor_options has no abort
/// callback: `cancel_when` is asked at each progress report).
///
/// Experimental (`brisk_experimental.h`, ABI 0.4): the checks, their names
/// and the JSON may change in any release.
pub fn doctor(options: &DoctorOptions, hooks: Hooks<'_>) -> Result<String> {
    let root = options.root.as_deref().map(path_cstring).transpose()?;
    let model = options.model_path.as_deref().map(path_cstring).transpose()?;
    let mut c = crate::init(sys::brisk_doctor_options_init);
    c.root = root.as_ref().map_or(ptr::null(), |r| r.as_ptr());
    c.model_path = model.as_ref().map_or(ptr::null(), |m| m.as_ptr());
    c.n_threads = options.n_threads;
    c.load_seconds = options.load_seconds;
    c.measure = options.measure as i32;
    // Owned from before the call: freed on every path, panics included.
    struct Free(*mut sys::brisk_doctor_report);
    impl Drop for Free {
        fn drop(&mut self) {
            if !self.0.is_null() {
                unsafe { sys::brisk_doctor_report_free(self.0) }
            }
        }
    }
    let mut rep = Free(ptr::null_mut());
    run_hooked(hooks, |t| {
        c.progress_fn = t.progress_cancel;
        c.progress_user_data = t.user_data;
        unsafe { sys::brisk_doctor_run(&c, &mut rep.0) }
    })?;
    text_out(|buf, cap, needed| unsafe { sys::brisk_doctor_report_json(rep.0, buf, cap, needed) })
}
