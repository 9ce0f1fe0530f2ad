// SPDX-License-Identifier: MIT
// The toolchain through the safe binding: convert, manifests, verify,
// bundles, quantize, calibrate (with resume), perplexity and compare, with
// their hooks, cancellation, panics and errors. Small inputs (stories260K).
// Missing test data skips a test, except under CI=true, where it fails.
use std::cell::Cell;
use std::path::{Path, PathBuf};

use brisk::{
    CalibrateOptions, CompareOptions, ConvertOptions, Flags, Hooks, Model, ModelOptions, PackOptions,
    PerplexityOptions, QuantizeOptions, Sampler, SamplerOptions, SessionOptions, Status, Type, VerifyOptions,
};

#[macro_use]
mod common;
use common::{test_file, Scratch};

fn greedy(path: &Path, n: usize) -> Vec<i32> {
    let model = Model::open(path).unwrap();
    let mut s = model.session(SessionOptions { n_ctx: 128, n_threads: 2, no_pin: true, ..Default::default() }).unwrap();
    s.eval(&model.tokenize("", Flags::ADD_BOS).unwrap()).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let t = smp.sample(&s).unwrap();
        smp.accept(t);
        out.push(t);
        s.eval(&[t]).unwrap();
    }
    out
}

fn with_manifest(dir: &Scratch) -> Option<PathBuf> {
    let src = test_file("models/stories260K.gguf")?;
    let out = dir.path("m.gguf");
    brisk::add_manifest(&src, Some(&out), &VerifyOptions::default(), Hooks::new()).unwrap();
    Some(out)
}

#[test]
fn errors_have_a_status_and_a_message() {
    let e = brisk::verify("/nonexistent/brisk/m.gguf", &VerifyOptions::default(), Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.to_string().contains("m.gguf"), "{}", e);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
    assert!(boxed.to_string().contains("BRISK_ERR_NOT_FOUND"));
    let plain = data!("models/stories260K.gguf");
    let e = brisk::verify(&plain, &VerifyOptions::default(), Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::NotFound, "no manifest: {}", e);
}

#[test]
fn manifest_verify_pack_unpack() {
    let dir = Scratch::new("bundle");
    let m = match with_manifest(&dir) {
        Some(m) => m,
        None => return,
    };
    let mut stages = Vec::new();
    let n = brisk::verify(
        &m,
        &VerifyOptions::default(),
        Hooks::new().on_progress(|p| {
            assert!(p.done <= p.total);
            stages.push(p.stage.to_string());
        }),
    )
    .unwrap();
    assert!(n > 1_000_000 && stages.first().map(String::as_str) == Some("verify"), "{} {:?}", n, stages);

    let (bundle, back) = (dir.path("m.brisk"), dir.path("back.gguf"));
    brisk::pack(&m, &bundle, &PackOptions { level: 1, ..Default::default() }, Hooks::new()).unwrap();
    assert!(brisk::verify(&bundle, &VerifyOptions::default(), Hooks::new()).unwrap() > 0);
    brisk::unpack(&bundle, &back, &PackOptions::default(), Hooks::new()).unwrap();
    assert!(std::fs::read(&m).unwrap() == std::fs::read(&back).unwrap(), "unpacked GGUF differs");

    // One flipped byte in the tensor data.
    let mut data = std::fs::read(&m).unwrap();
    let at = data.len() - 100;
    data[at] ^= 0x40;
    let bad = dir.path("bad.gguf");
    std::fs::write(&bad, &data).unwrap();
    let mut found = Vec::new();
    let e = brisk::verify(
        &bad,
        &VerifyOptions::default(),
        Hooks::new().on_mismatch(|mm| found.push((mm.location.to_string(), mm.detail.to_string()))),
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::Checksum);
    assert!(found.len() == 1 && found[0].0.contains("tensor"), "{:?}", found);
    // Opening with `verify` checks the manifest first.
    let verified = ModelOptions { verify: true, ..Default::default() };
    Model::open_with(&m, verified).unwrap();
    let e = Model::open_with(&bad, ModelOptions { verify: true, ..Default::default() }).err().unwrap();
    assert_eq!(e.status(), Status::Checksum);
    // A manifest added in place.
    let in_place = dir.path("inplace.gguf");
    std::fs::copy(test_file("models/stories260K.gguf").unwrap(), &in_place).unwrap();
    brisk::add_manifest(&in_place, None, &VerifyOptions::default(), Hooks::new()).unwrap();
    brisk::verify(&in_place, &VerifyOptions::default(), Hooks::new()).unwrap();
    let e = brisk::pack(&bad, dir.path("bad.brisk"), &PackOptions::default(), Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::Checksum);
    assert!(!dir.path("bad.brisk").exists());

    // A damaged bundle: no output.
    let mut b = std::fs::read(&bundle).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(dir.path("bad.brisk"), &b).unwrap();
    let e = brisk::unpack(dir.path("bad.brisk"), dir.path("never.gguf"), &PackOptions::default(), Hooks::new())
        .unwrap_err();
    assert!(matches!(e.status(), Status::Checksum | Status::BadFormat), "{}", e);
    assert!(!dir.path("never.gguf").exists());
}

#[test]
fn cancel_and_panic_in_hooks() {
    let dir = Scratch::new("cancel");
    let m = match with_manifest(&dir) {
        Some(m) => m,
        None => return,
    };
    // Cancelled from the progress hook (through state both hooks borrow).
    let stop = Cell::new(false);
    let e = brisk::pack(
        &m,
        dir.path("c.brisk"),
        &PackOptions::default(),
        Hooks::new().on_progress(|_| stop.set(true)).cancel_when(|| stop.get()),
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::Cancelled);
    assert!(!dir.path("c.brisk").exists());

    // A panic in a hook stops the call and resumes in the caller.
    let r = std::panic::catch_unwind(|| {
        let _ = brisk::verify(&m, &VerifyOptions::default(), Hooks::new().on_progress(|_| panic!("hook panic")));
    });
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"hook panic"));
}

#[test]
fn convert_checkpoints() {
    let dir = Scratch::new("convert");
    let reference = data!("models/stories260K.gguf");
    let want = greedy(&reference, 24);
    let (bin, tok) = (data!("models/stories260K.bin"), data!("models/tok512.bin"));
    let out = dir.path("l2c.gguf");
    let mut reports = 0;
    brisk::convert_llama2c(
        &bin,
        &tok,
        &out,
        &ConvertOptions::default(),
        Hooks::new().on_progress(|p| {
            assert_eq!(p.stage, "convert");
            reports += 1;
        }),
    )
    .unwrap();
    assert!(reports > 0);
    assert_eq!(greedy(&out, 24), want);

    let hf = data!("models/stories260K-hf-f32");
    let out = dir.path("hf.gguf");
    brisk::convert_hf(&hf, &out, &ConvertOptions::default(), Hooks::new()).unwrap();
    assert_eq!(greedy(&out, 24), want);
    // Rows of 64 do not fit K-quant blocks: the fallbacks are logged.
    let mut warnings = 0;
    let k = ConvertOptions { ty: Type::Q4K, name: Some("k".into()), ..Default::default() };
    brisk::convert_hf(&hf, dir.path("k.gguf"), &k, Hooks::new().on_log(|_, _| warnings += 1)).unwrap();
    assert!(warnings > 0);
    assert_eq!(Model::open(dir.path("k.gguf")).unwrap().meta("general.name").unwrap(), "k");
    let e = brisk::convert_hf(dir.path("nothing"), dir.path("y.gguf"), &ConvertOptions::default(), Hooks::new());
    assert!(e.is_err());
}

#[test]
fn quantize_and_compare() {
    let dir = Scratch::new("quantize");
    let input = data!("models/stories260K.gguf");
    let out = dir.path("q4.gguf");
    let o = QuantizeOptions::default();
    assert!(o.preset == "q8_0" && o.report);
    let o = QuantizeOptions { preset: "q4_0".into(), tensor_types: vec!["attn_q=q8_0".into()], ..o };
    let (mut q4, mut overrides, mut warnings) = (0, 0, 0);
    brisk::quantize(
        &input,
        &out,
        &o,
        Hooks::new()
            .on_tensor(|t| {
                assert!(t.src() == Some(Type::F32) && t.bytes > 0 && t.n_elements > 0, "{:?}", t);
                if t.dst() == Some(Type::Q4_0) {
                    q4 += 1;
                }
                if t.name.contains("attn_q") && t.dst() == Some(Type::Q8_0) && t.why.contains("override") {
                    overrides += 1;
                }
            })
            .on_log(|_, _| warnings += 1),
    )
    .unwrap();
    assert!(q4 >= 20 && overrides == 5 && warnings >= 5, "{} {} {}", q4, overrides, warnings);
    brisk::verify(&out, &VerifyOptions::default(), Hooks::new()).unwrap();
    let bad = QuantizeOptions { preset: "q3_xx".into(), ..Default::default() };
    let e = brisk::quantize(&input, dir.path("bad.gguf"), &bad, Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);

    let (a, b) = (Model::open(&input).unwrap(), Model::open(&out).unwrap());
    let co = CompareOptions { n_predict: 16, ..Default::default() };
    let prompts = ["Once upon a time", "The little dog"];
    let same = brisk::compare(&a, &a, &prompts, &co, Hooks::new()).unwrap();
    assert!(same.prompts == 2 && same.identical_pct == 100.0 && same.diverging == 0, "{:?}", same);
    let mut reports = 0;
    let diff = brisk::compare(&a, &b, &prompts, &co, Hooks::new().on_progress(|_| reports += 1)).unwrap();
    assert!(diff.prompts == 2 && reports > 0);
    let squeezed: String = diff.json.chars().filter(|c| !c.is_whitespace()).collect();
    let identical = squeezed.matches("\"identical\":true").count() as f64;
    assert!((identical * 50.0 - diff.identical_pct).abs() < 1e-9, "{} vs {:?}", identical, diff);
}

#[test]
fn calibrate_resume_and_budget() {
    let dir = Scratch::new("calibrate");
    let model = data!("models/stories260K.gguf");
    let data = [data!("data/splits/stories-calib.txt")];
    let co = CalibrateOptions { n_ctx: 128, max_tokens: 128 * 6, ..Default::default() };
    let (full, part) = (dir.path("full.calib"), dir.path("part.calib"));
    brisk::calibrate(&model, &full, &data, &co, Hooks::new()).unwrap();

    // Stopped after a few reports, then resumed where it stopped.
    let reports = Cell::new(0);
    let e = brisk::calibrate(
        &model,
        &part,
        &data,
        &co,
        Hooks::new()
            .on_progress(|p| {
                assert!(p.stage == "calibrate" && p.total == 128 * 6, "{:?}", p);
                reports.set(reports.get() + 1);
            })
            .cancel_when(|| reports.get() >= 3),
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::Cancelled);
    assert!(part.exists(), "no partial file");
    let mut first = u64::MAX;
    let resume = CalibrateOptions { resume: true, ..co.clone() };
    brisk::calibrate(&model, &part, &data, &resume, Hooks::new().on_progress(|p| first = first.min(p.done))).unwrap();
    assert!(first > 0 && first < u64::MAX, "resumed from {}", first);

    // Quantized within a budget with either statistics: the same weights.
    let qo = QuantizeOptions {
        preset: "q4_0".into(),
        target_size: 300_000,
        sensitivity_tokens: 128,
        eval_max_chunks: 4,
        ..Default::default()
    };
    let mut outs = Vec::new();
    for (name, calib) in [("full", &full), ("resumed", &part)] {
        let out = dir.path(&format!("{}.gguf", name));
        let o = QuantizeOptions { calibration: Some(calib.clone()), report: name == "full", ..qo.clone() };
        let mut stages = std::collections::BTreeSet::new();
        brisk::quantize(&model, &out, &o, Hooks::new().on_progress(|p| drop(stages.insert(p.stage.to_string()))))
            .unwrap();
        assert!(stages.contains("sensitivity") && stages.contains("quantize"), "{:?}", stages);
        assert!(std::fs::metadata(&out).unwrap().len() <= 300_000);
        outs.push(out);
    }
    assert!(dir.path("full.report.json").exists());
    let (a, b) = (Model::open(&outs[0]).unwrap(), Model::open(&outs[1]).unwrap());
    let same = brisk::compare(&a, &b, &["Once upon a time"], &CompareOptions::default(), Hooks::new()).unwrap();
    assert_eq!(same.identical_pct, 100.0);
    // A budget in bits per weight instead, checked in the report.
    let bpw = QuantizeOptions { calibration: Some(full.clone()), target_size: 0, target_bpw: 8.0, ..qo.clone() };
    brisk::quantize(&model, dir.path("bpw.gguf"), &bpw, Hooks::new()).unwrap();
    let report = std::fs::read_to_string(dir.path("bpw.report.json")).unwrap();
    let got = json_number(&report, "bits_per_weight");
    assert!(got > 6.0 && got <= 8.0 && json_number(&report, "target_bpw") == 8.0, "{}", got);
    let tiny = QuantizeOptions { calibration: Some(full.clone()), target_size: 100_000, report: false, ..qo };
    let e = brisk::quantize(&model, dir.path("tiny.gguf"), &tiny, Hooks::new()).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
}

/// The number after the first `"key":` in a JSON text (no JSON crate here).
fn json_number(json: &str, key: &str) -> f64 {
    let at = json.find(&format!("\"{}\"", key)).unwrap_or_else(|| panic!("no {} in the report", key));
    let rest = json[at + key.len() + 2..].trim_start().trim_start_matches(':').trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c))).unwrap_or(rest.len());
    rest[..end].parse().unwrap()
}

#[test]
fn perplexity_and_kl() {
    let m = Model::open(data!("models/stories260K.gguf")).unwrap();
    let q = Model::open(data!("models/stories260K-q4_0.gguf")).unwrap();
    let text = std::fs::read_to_string(data!("data/splits/stories-heldout.txt")).unwrap();
    let o = PerplexityOptions { n_ctx: 128, max_chunks: 4, ..Default::default() };
    let mut reports = 0;
    let r = m.perplexity(&text, None, &o, Hooks::new().on_progress(|_| reports += 1)).unwrap();
    assert!(r.chunks == 4 && r.scored_tokens > 0 && r.text_tokens >= r.scored_tokens && r.kl.is_none());
    assert!(r.ppl > 1.0 && r.ppl < 100.0 && (r.ppl.ln() - r.mean_nll).abs() < 1e-6 && reports > 0, "{:?}", r);
    assert!(r.json.trim_start().starts_with('{') && r.json.contains("ppl"));

    let kl = q.perplexity(&text, Some(&m), &o, Hooks::new()).unwrap().kl.unwrap();
    assert!(kl.mean > 0.0 && kl.max >= kl.median && kl.same_top_pct > 50.0, "{:?}", kl);
    assert!((kl.base_ppl - r.ppl).abs() < 1e-6 * r.ppl);
    let own = m.perplexity(&text, Some(&m), &o, Hooks::new()).unwrap().kl.unwrap();
    assert!(own.mean < 1e-9 && own.same_top_pct == 100.0, "{:?}", own);
    let e = m.perplexity(&text, None, &o, Hooks::new().cancel_when(|| true)).unwrap_err();
    assert_eq!(e.status(), Status::Cancelled);
}
