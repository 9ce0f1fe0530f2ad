// SPDX-License-Identifier: MIT
// The option fields that reach brisk only through the binding's struct
// mapping: each test fails if its field is dropped on the way to C.
// Missing test data skips a test, except under CI=true, where it fails.
use std::collections::HashMap;
use std::path::PathBuf;

use brisk::{
    CalibrateOptions, ConvertOptions, EngineOptions, Flags, GenerateOptions, Hooks, Model, ModelOptions, PackOptions,
    PlanMode, QuantizeOptions, Sampler, SamplerOptions, SessionOptions, Status, Token, VerifyOptions,
};

#[macro_use]
mod common;
use common::Scratch;

fn session_opts() -> SessionOptions {
    SessionOptions { n_ctx: 256, n_threads: 2, no_pin: true, ..Default::default() }
}

fn greedy(model: &Model, prompt: &[Token], n: i32, options: SessionOptions) -> Vec<Token> {
    let mut s = model.session(options).unwrap();
    s.eval(prompt).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let mut out = Vec::new();
    s.generate_with(&mut smp, &GenerateOptions { max_tokens: n, stop_at_eos: false }, |t, _| {
        out.extend(t);
        true
    })
    .unwrap();
    out
}

/// Succeeded, or refused by the OS with the RLIMIT_MEMLOCK numbers: mlock
/// reached brisk whatever this machine's limit is.
fn mlock_ok<T>(what: &str, r: brisk::Result<T>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            assert!(
                e.status() == Status::OutOfMemory && e.message().contains("RLIMIT_MEMLOCK"),
                "{} with mlock: {}",
                what,
                e
            );
            None
        }
    }
}

#[test]
fn unset_fields_keep_brisks_defaults() {
    let mo = ModelOptions::default();
    assert!(!mo.mlock && !mo.no_mmap && mo.plan_mode == PlanMode::Default);
    assert!(mo.plan_cache_dir.is_none() && mo.plan_threads == 0);
    let so = SessionOptions::default();
    assert!(!so.pin_caller && so.memory_budget == 0);
    assert!(!EngineOptions::default().pin_caller);
    let smp = SamplerOptions::default();
    assert!(smp.presence_penalty == 0.0 && smp.frequency_penalty == 0.0);
    let qo = QuantizeOptions::default();
    assert!(!qo.mlock && !qo.no_mmap && qo.calibration_data.is_empty());
    let co = ConvertOptions::default();
    assert!(!co.mlock && !co.no_mmap);
    let vo = VerifyOptions::default();
    assert!(!vo.mlock && !vo.no_mmap);
    let po = PackOptions::default();
    assert!(!po.mlock && !po.no_mmap);
    let ca = CalibrateOptions::default();
    assert!(!ca.mlock && !ca.no_mmap);
    for m in PlanMode::ALL {
        assert_eq!(PlanMode::from_code(i64::from(m.code())), Some(m));
    }
    assert_eq!(PlanMode::from_code(9), None);
}

/// Greedy sampling with presence and frequency penalties picks, at every
/// step, the argmax of the session's logits lowered as brisk.h says: by
/// presence once a token is among the last `repeat_last_n` accepted, plus
/// frequency times its count there. The penalties and their sums are exact
/// in f32, so the check is exact; each case (presence only, frequency only,
/// both) differs from the unpenalised run.
#[test]
fn presence_and_frequency_penalties_lower_the_logits_as_documented() {
    let m = Model::open(data!("models/stories260K.gguf")).unwrap();
    let prompt = m.tokenize("Once upon a time", Flags::ADD_BOS).unwrap();
    const N: usize = 48;
    const WINDOW: usize = 16;
    let plain = greedy(&m, &prompt, N as i32, session_opts());
    for (presence, frequency) in [(1.5f32, 0.0f32), (0.0, 0.75), (0.5, 0.75)] {
        let mut s = m.session(session_opts()).unwrap();
        s.eval(&prompt).unwrap();
        let mut smp = Sampler::new(&SamplerOptions {
            repeat_last_n: WINDOW as i32,
            presence_penalty: presence,
            frequency_penalty: frequency,
            ..SamplerOptions::greedy()
        })
        .unwrap();
        let (mut got, mut recent): (Vec<Token>, Vec<Token>) = (Vec::new(), Vec::new());
        for step in 0..N {
            let logits = s.logits().unwrap();
            let mut count: HashMap<Token, u32> = HashMap::new();
            for &t in &recent {
                *count.entry(t).or_insert(0) += 1;
            }
            let pen = |i: usize| match count.get(&(i as Token)) {
                Some(&c) => logits[i] - (presence + frequency * c as f32),
                None => logits[i],
            };
            let mut best = 0;
            for j in 1..logits.len() {
                if pen(j) > pen(best) {
                    best = j;
                }
            }
            let t = smp.sample(&s).unwrap();
            assert_eq!(
                t, best as Token,
                "presence {}, frequency {}, step {}: tokens so far {:?}",
                presence, frequency, step, got
            );
            smp.accept(t);
            recent.push(t);
            if recent.len() > WINDOW {
                recent.remove(0);
            }
            got.push(t);
            s.eval(&[t]).unwrap();
        }
        assert_ne!(got, plain, "presence {}, frequency {} changed nothing", presence, frequency);
    }

    // A huge frequency penalty alone: no token repeats within the window,
    // through a session's generate and an engine's sequence.
    let huge = SamplerOptions { repeat_last_n: 64, frequency_penalty: 1000.0, ..SamplerOptions::greedy() };
    let no_repeat = |what: &str, ids: &[Token]| {
        let mut seen = std::collections::HashSet::new();
        for t in ids {
            assert!(seen.insert(*t), "{}: token {} repeats: {:?}", what, t, ids);
        }
    };
    let mut s = m.session(session_opts()).unwrap();
    s.eval(&prompt).unwrap();
    let mut smp = Sampler::new(&huge).unwrap();
    let mut ids = Vec::new();
    s.generate_with(&mut smp, &GenerateOptions { max_tokens: 40, stop_at_eos: false }, |t, _| {
        ids.extend(t);
        true
    })
    .unwrap();
    assert_eq!(ids.len(), 40);
    no_repeat("session", &ids);
    let engine =
        m.engine(EngineOptions { n_ctx: 256, n_seq_max: 1, n_threads: 2, no_pin: true, ..Default::default() }).unwrap();
    let mut seq = engine.sequence().unwrap();
    seq.add_tokens(&prompt).unwrap();
    seq.generate(&huge, &GenerateOptions { max_tokens: 40, stop_at_eos: false }).unwrap();
    engine.run().unwrap();
    let ids = seq.generated().unwrap();
    assert_eq!(ids.len(), 40);
    no_repeat("engine", &ids);
}

#[test]
fn no_mmap_and_mlock_models_give_the_mapped_tokens() {
    let path = data!("models/stories260K.gguf");
    let mapped = Model::open(&path).unwrap();
    let prompt = mapped.tokenize("Once upon a time", Flags::ADD_BOS).unwrap();
    let want = greedy(&mapped, &prompt, 24, session_opts());
    let read = Model::open_with(&path, ModelOptions { no_mmap: true, ..Default::default() }).unwrap();
    assert_eq!(greedy(&read, &prompt, 24, session_opts()), want);
    for no_mmap in [false, true] {
        let r = Model::open_with(&path, ModelOptions { mlock: true, no_mmap, ..Default::default() });
        if let Some(m) = mlock_ok("open", r) {
            assert_eq!(greedy(&m, &prompt, 24, session_opts()), want, "mlock, no_mmap {}", no_mmap);
        }
    }
}

/// Fixed measures nothing; Measure measures with `plan_threads` and caches
/// in `plan_cache_dir`, where Auto then finds the plan. The kernel plan
/// text says which.
#[test]
fn plan_modes_show_in_the_kernel_plan() {
    let path = data!("models/stories260K.gguf");
    let dir = Scratch::new("plans");
    let plan = |mode: PlanMode| {
        let o = ModelOptions { plan_mode: mode, plan_cache_dir: Some(dir.0.clone()), plan_threads: 1, ..Default::default() };
        Model::open_with(&path, o).unwrap().kernel_plan().unwrap()
    };
    let p = plan(PlanMode::Fixed);
    assert!(p.starts_with("kernel plan: fixed"), "{}", p);
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0, "a fixed plan wrote to the cache");
    let where_ = dir.0.to_str().unwrap();
    let p = plan(PlanMode::Measure);
    assert!(p.starts_with("kernel plan: measured") && p.contains("for 1 thread (") && p.contains(where_), "{}", p);
    let p = plan(PlanMode::Auto);
    assert!(p.starts_with("kernel plan: cached") && p.contains(where_), "{}", p);
}

#[test]
fn session_memory_budget_and_pinned_callers() {
    let m = Model::open(data!("models/stories260K.gguf")).unwrap();
    let e = m.session(SessionOptions { memory_budget: 4096, ..session_opts() }).err().expect("a 4 KiB budget");
    assert_eq!(e.status(), Status::OutOfMemory, "{}", e);
    assert!(e.message().contains("not enough memory") && e.message().contains("memory budget"), "{}", e);
    let prompt = m.tokenize("Once upon a time", Flags::ADD_BOS).unwrap();
    let want = greedy(&m, &prompt, 16, session_opts());
    assert_eq!(greedy(&m, &prompt, 16, SessionOptions { memory_budget: 1 << 30, ..session_opts() }), want);

    // Pinning the calling thread (this test's own; given back on drop)
    // gives the same tokens, for a session and for an engine.
    let pinned = SessionOptions { no_pin: false, pin_caller: true, n_threads: 1, ..session_opts() };
    assert_eq!(greedy(&m, &prompt, 16, pinned), want);
    let engine = m
        .engine(EngineOptions { n_ctx: 256, n_seq_max: 1, n_threads: 1, pin_caller: true, ..Default::default() })
        .unwrap();
    let mut seq = engine.sequence().unwrap();
    seq.add_tokens(&prompt).unwrap();
    seq.generate(&SamplerOptions::greedy(), &GenerateOptions { max_tokens: 16, stop_at_eos: false }).unwrap();
    engine.run().unwrap();
    assert_eq!(seq.generated().unwrap(), want);
}

/// Quantizing to a budget measures KL on the calibration text only when it
/// is named (`calibration_data`); without it, sensitivity falls back to
/// weighted error. The method is recorded in the output's metadata.
#[test]
fn quantize_calibration_data_and_tool_reading_options() {
    let model = data!("models/stories260K.gguf");
    let text = data!("data/splits/stories-calib.txt");
    let dir = Scratch::new("calibdata");
    let stats = dir.path("s.calib");
    let co = CalibrateOptions { n_ctx: 128, max_tokens: 256, no_mmap: true, ..Default::default() };
    brisk::calibrate(&model, &stats, &[&text], &co, Hooks::new()).unwrap();
    let method = |name: &str, calibration_data: Vec<PathBuf>| {
        let qo = QuantizeOptions {
            preset: "q4_0".into(),
            calibration: Some(stats.clone()),
            target_size: 300000,
            sensitivity_tokens: 128,
            eval_max_chunks: 2,
            report: false,
            calibration_data,
            no_mmap: true,
            ..Default::default()
        };
        let out = dir.path(name);
        brisk::quantize(&model, &out, &qo, Hooks::new()).unwrap();
        Model::open(&out).unwrap().meta("brisk.recipe.method").unwrap()
    };
    assert_eq!(method("with.gguf", vec![text.clone()]), "kl-scaled-error");
    assert_eq!(method("without.gguf", Vec::new()), "weighted-error");

    // The toolchain's mlock and no_mmap reach brisk: no_mmap reads the same
    // bytes; mlock succeeds or is refused naming RLIMIT_MEMLOCK.
    let gguf = dir.path("m.gguf");
    brisk::add_manifest(&model, Some(&gguf), &VerifyOptions::default(), Hooks::new()).unwrap();
    let want = brisk::verify(&gguf, &VerifyOptions::default(), Hooks::new()).unwrap();
    let read = VerifyOptions { no_mmap: true, ..Default::default() };
    assert_eq!(brisk::verify(&gguf, &read, Hooks::new()).unwrap(), want);
    let locked = VerifyOptions { mlock: true, ..Default::default() };
    if let Some(n) = mlock_ok("verify", brisk::verify(&gguf, &locked, Hooks::new())) {
        assert_eq!(n, want);
    }
    let po = PackOptions { mlock: true, no_mmap: true, ..Default::default() };
    mlock_ok("pack", brisk::pack(&gguf, dir.path("m.brisk"), &po, Hooks::new()));
    let qo = QuantizeOptions { mlock: true, ..Default::default() };
    mlock_ok("quantize", brisk::quantize(&model, dir.path("q8.gguf"), &qo, Hooks::new()));
}
