// SPDX-License-Identifier: MIT
// brisk::doctor (experimental) through the safe binding: this machine's
// files, a fake /proc tree, a model that cannot be opened, bad options.
// Nothing here measures (`measure: false`): the machine may be running
// benchmarks. The progress hook only runs during the load test, so the
// test of it and of cancellation runs only with BRISK_TEST_DOCTOR_MEASURE=1.
// The crate has no JSON parser, so the tests read the report's text.
use std::cell::Cell;

use brisk::{DoctorOptions, Hooks, Status};

#[macro_use]
mod common;
use common::Scratch;

fn files_only() -> DoctorOptions {
    DoctorOptions { measure: false, load_seconds: 0.0, ..Default::default() }
}

/// The number after `"key": ` in the report (the counts and threads).
fn count(json: &str, key: &str) -> u64 {
    let pat = format!("\"{}\": ", key);
    let at = json.find(&pat).unwrap_or_else(|| panic!("no {} in {}", key, json)) + pat.len();
    let digits: String = json[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or_else(|_| panic!("{}: not a number in {}", key, json))
}

/// The checks' statuses: brisk prints each as `"status": "..."`.
fn statuses(json: &str) -> Vec<String> {
    json.split("\"status\": \"").skip(1).map(|s| s[..s.find('"').unwrap()].to_string()).collect()
}

/// Known statuses, and counts that add up to the checks.
fn check_report(json: &str) {
    assert!(json.trim_start().starts_with('{') && json.trim_end().ends_with('}'), "{}", json);
    let st = statuses(json);
    assert!(!st.is_empty() && count(json, "threads") >= 1, "{}", json);
    assert_eq!(st.len(), json.matches("\"check\": ").count(), "{}", json);
    let n = |s: &str| st.iter().filter(|x| x.as_str() == s).count() as u64;
    for s in ["ok", "warn", "fail", "info"] {
        assert_eq!(count(json, s), n(s), "{} in {}", s, json);
    }
    assert_eq!(n("ok") + n("warn") + n("fail") + n("info"), st.len() as u64, "{}", json);
}

/// A minimal /proc: 3 processors of a named CPU with AVX2, 8000 MiB of
/// memory of which 4000 MiB available, and no /sys at all.
fn fake_root(name: &str) -> Scratch {
    let dir = Scratch::new(name);
    std::fs::create_dir_all(dir.path("proc")).unwrap();
    let cpuinfo: String = (0..3)
        .map(|i| format!("processor\t: {}\nmodel name\t: Fake CPU 1234\nflags\t\t: fpu sse2 avx avx2 fma f16c\n\n", i))
        .collect();
    std::fs::write(dir.path("proc/cpuinfo"), cpuinfo).unwrap();
    std::fs::write(dir.path("proc/meminfo"), "MemTotal:        8192000 kB\nMemAvailable:    4096000 kB\n").unwrap();
    dir
}

#[test]
fn defaults() {
    let o = DoctorOptions::default();
    assert!(o.root.is_none() && o.model_path.is_none() && o.n_threads == 0, "{:?}", o);
    assert!(o.load_seconds == 20.0 && o.measure, "{:?}", o);
}

#[test]
fn this_machine() {
    let json = brisk::doctor(&files_only(), Hooks::new()).unwrap();
    check_report(&json);
    for c in ["cpu", "cores", "memory", "swap"] {
        assert!(json.contains(&format!("\"check\": \"{}\"", c)), "no {} in {}", c, json);
    }
    for c in ["bandwidth", "throttling", "disk_read", "model"] {
        assert!(!json.contains(&format!("\"check\": \"{}\"", c)), "files only, no model, yet {} in {}", c, json);
    }
}

#[test]
fn fake_root_is_read() {
    let root = fake_root("doctor-root");
    let o = DoctorOptions { root: Some(root.0.clone()), ..files_only() };
    let json = brisk::doctor(&o, Hooks::new()).unwrap();
    check_report(&json);
    assert!(json.contains("Fake CPU 1234; brisk kernels: avx2"), "{}", json);
    assert!(json.contains("4000 MiB available of 8000 MiB"), "{}", json);
    // No sysfs topology: the processors of cpuinfo are the cores.
    assert!(json.contains("3 physical cores") && count(&json, "threads") == 3, "{}", json);
    assert!(json.contains("\"value\": \"no swap\""), "{}", json);
    // n_threads overrides the choice.
    let json = brisk::doctor(&DoctorOptions { n_threads: 2, ..o }, Hooks::new()).unwrap();
    assert_eq!(count(&json, "threads"), 2, "{}", json);
}

/// A model that cannot be opened is a failed check naming the path, not an
/// error; options out of range are an error.
#[test]
fn bad_model_and_options() {
    let root = fake_root("doctor-model");
    let model = root.path("no-such-model.gguf");
    let o = DoctorOptions { root: Some(root.0.clone()), model_path: Some(model.clone()), ..files_only() };
    let json = brisk::doctor(&o, Hooks::new()).unwrap();
    check_report(&json);
    let at = json.find("\"check\": \"model\"").unwrap_or_else(|| panic!("no model check in {}", json));
    let model_check = &json[at..at + json[at..].find('}').unwrap()];
    assert!(model_check.contains("\"status\": \"fail\""), "{}", model_check);
    assert!(model_check.contains(model.to_str().unwrap()), "{}", model_check);
    assert!(count(&json, "fail") >= 1, "{}", json);

    let e = brisk::doctor(&DoctorOptions { load_seconds: -1.0, ..files_only() }, Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
    assert!(e.message().contains("load_seconds"), "{}", e);
    let e = brisk::doctor(&DoctorOptions { root: Some("a\0b".into()), ..files_only() }, Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{}", e);
}

/// The load test's progress, cancelled from the hooks, then a panic in a
/// hook (each run measures bandwidth over 256 MiB and loads one thread for
/// about half a second): only with BRISK_TEST_DOCTOR_MEASURE=1.
#[test]
fn progress_and_cancel() {
    if std::env::var("BRISK_TEST_DOCTOR_MEASURE").map_or(true, |v| v != "1") {
        eprintln!("skipped: measures the machine (set BRISK_TEST_DOCTOR_MEASURE=1)");
        return;
    }
    let root = fake_root("doctor-progress");
    let o = DoctorOptions { root: Some(root.0.clone()), n_threads: 1, load_seconds: 30.0, ..Default::default() };
    let (reports, polls) = (Cell::new(0u32), Cell::new(0u32));
    let e = brisk::doctor(
        &o,
        Hooks::new()
            .on_progress(|p| {
                assert!(p.stage == "doctor" && p.total == 30 && p.done <= 2, "{:?}", p);
                reports.set(reports.get() + 1);
            })
            .cancel_when(|| {
                polls.set(polls.get() + 1);
                true
            }),
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::Cancelled, "{}", e);
    assert!(reports.get() == 1 && polls.get() == 1, "{} reports, {} polls", reports.get(), polls.get());
    // A panic in a hook stops the call and resumes in the caller.
    let r = std::panic::catch_unwind(|| {
        let _ = brisk::doctor(&o, Hooks::new().on_progress(|_| panic!("doctor panic")));
    });
    let p = r.unwrap_err();
    assert_eq!(p.downcast_ref::<&str>(), Some(&"doctor panic"));
}
