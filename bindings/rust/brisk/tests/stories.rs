// SPDX-License-Identifier: MIT
// The safe binding against stories260K: greedy text, engine-equals-session,
// forks, callbacks, errors. Missing test data skips a test, except under
// CI=true, where it fails.
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use brisk::{
    ChatMessage, EngineOptions, Flags, GenerateOptions, LogLevel, Model, ModelOptions, Sampler, SamplerOptions,
    SequenceState, SessionOptions, Status, StopReason, SynthesizeOptions, Token,
};

const LILY: &str = "Once upon a time, there was a little girl named Lily.";

mod common;
use common::test_file;

macro_rules! stories {
    () => {
        match test_file("models/stories260K.gguf") {
            Some(p) => Model::open(p).expect("open stories260K"),
            None => return,
        }
    };
}

fn session_opts() -> SessionOptions {
    SessionOptions { n_ctx: 256, n_threads: 2, no_pin: true, ..Default::default() }
}

fn engine_opts(n_seq: u32) -> EngineOptions {
    EngineOptions { n_ctx: 256, n_seq_max: n_seq, n_threads: 2, no_pin: true, ..Default::default() }
}

fn greedy_alone(model: &Model, prompt: &[Token], n: usize) -> Vec<Token> {
    let mut s = model.session(session_opts()).unwrap();
    s.eval(prompt).unwrap();
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

#[test]
fn handle_types_are_send_and_model_is_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Model>();
    sync::<Model>();
    send::<brisk::Session<'static>>();
    send::<brisk::Engine<'static>>();
    send::<Sampler>();
    send::<brisk::Error>();
    sync::<brisk::Error>();
}

#[test]
fn versions_and_status_names() {
    let (major, minor) = brisk::abi_version();
    assert_eq!(major, brisk::sys::BRISK_ABI_VERSION_MAJOR);
    assert!(minor >= brisk::sys::BRISK_ABI_VERSION_MINOR);
    assert!(brisk::version().contains('.'));
    assert_eq!(Status::Cancelled.name(), "BRISK_ERR_CANCELLED");
    assert_eq!(Status::from_code(-7), Some(Status::ContextFull));
}

#[test]
fn errors_carry_status_and_message() {
    let e = Model::open("/nonexistent/brisk/model.gguf").unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("model.gguf"), "{}", e);
    let e = Sampler::new(&SamplerOptions { repeat_penalty: 0.0, ..Default::default() }).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(Model::open("a\0b").is_err());
}

#[test]
fn model_info_and_tokens() {
    let m = stories!();
    assert_eq!((m.n_vocab(), m.token_bos(), m.token_eos()), (512, Some(1), Some(2)));
    assert!(m.n_ctx_train() > 0 && m.file_size() > 0);
    assert!(m.decode_bytes() > 0 && m.decode_bytes() < m.file_size());
    assert!(m.describe().unwrap().contains("vocab 512"));
    assert!(m.kernel_plan().unwrap().starts_with("kernel plan: "));
    assert_eq!(m.meta("general.architecture").unwrap(), "llama");
    assert_eq!(m.meta("no.such.key").unwrap_err().status(), Status::NotFound);
    let ids = m.tokenize("Once upon a time", Flags::ADD_BOS).unwrap();
    assert_eq!(ids[0], 1);
    assert_eq!(m.detokenize(&ids, Flags::ADD_BOS).unwrap(), "Once upon a time");
    let pieces: Vec<u8> = ids[1..].iter().flat_map(|&t| m.token_to_piece(t, Flags::NONE).unwrap()).collect();
    assert_eq!(String::from_utf8(pieces).unwrap().trim_start(), "Once upon a time");
    assert_eq!(m.token_to_piece(1, Flags::PIECE_SPECIAL).unwrap(), b"<s>");
    let long = "The little dog ran to the park. ".repeat(300);
    let ids = m.tokenize(&long, Flags::NONE).unwrap();
    assert!(ids.len() > 1000);
    assert_eq!(m.detokenize(&ids, Flags::NONE).unwrap().trim_start(), long);
}

#[test]
fn chat_render() {
    let m = stories!();
    let msgs = [ChatMessage { role: "system", content: "Be brief." }, ChatMessage { role: "user", content: "Hi" }];
    assert_eq!(
        m.chat_render(Some("chatml"), &msgs, true).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(m.chat_render(None, &msgs, true).unwrap_err().status(), Status::Unsupported);
    assert_eq!(m.chat_render(Some("nonsense"), &msgs, true).unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn greedy_generation_tells_the_lily_story() {
    let m = stories!();
    let mut s = m.session(session_opts()).unwrap();
    let bos = m.tokenize("", Flags::ADD_BOS).unwrap();
    s.eval(&bos).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let mut text = String::new();
    let mut toks = Vec::new();
    let opts = GenerateOptions { max_tokens: 40, ..Default::default() };
    let g = s
        .generate_with(&mut smp, &opts, |t, piece| {
            toks.extend(t);
            text.push_str(piece);
            true
        })
        .unwrap();
    assert!(text.starts_with(LILY), "{:?}", text);
    assert_eq!((g.n_generated, g.stop_reason, toks.len()), (40, StopReason::MaxTokens, 40));
    assert_eq!(s.position(), 41);
    assert_eq!(toks, greedy_alone(&m, &bos, 40));
    let all: Vec<Token> = bos.iter().chain(toks.iter()).copied().collect();
    assert_eq!(m.detokenize(&all, Flags::ADD_BOS).unwrap(), text);

    // Back to the prompt: the same tokens again; a callback stops it.
    s.truncate(1).unwrap();
    assert_eq!(s.logits().unwrap_err().status(), Status::InvalidArgument);
    s.truncate(0).unwrap();
    s.eval(&bos).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let mut again = Vec::new();
    let g = s
        .generate_with(&mut smp, &opts, |t, _| {
            again.extend(t);
            again.len() < 10
        })
        .unwrap();
    assert_eq!((g.n_generated, g.stop_reason), (10, StopReason::Callback));
    assert_eq!(again, toks[..10]);
    // Without a callback.
    s.reset().unwrap();
    s.eval(&bos).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::greedy()).unwrap();
    let g = s.generate(&mut smp, &GenerateOptions { max_tokens: 5, ..Default::default() }).unwrap();
    assert_eq!(g.n_generated, 5);
}

#[test]
fn eval_all_logits_and_context_full() {
    let m = stories!();
    let mut s = m.session(session_opts()).unwrap();
    assert_eq!(s.logits().unwrap_err().status(), Status::InvalidArgument);
    let ids = m.tokenize("Lily had a red ball.", Flags::ADD_BOS).unwrap();
    let all = s.eval_all(&ids).unwrap();
    assert_eq!(all.len(), ids.len() * 512);
    assert_eq!(s.logits().unwrap(), &all[(ids.len() - 1) * 512..]);
    let pos = s.position();
    assert_eq!(s.eval(&[100; 300]).unwrap_err().status(), Status::ContextFull);
    assert_eq!(s.position(), pos);
    assert_eq!(s.eval(&[99999]).unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn abort_cancels_eval() {
    let m = stories!();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let opts =
        SessionOptions { abort: Some(Box::new(move || c.fetch_add(1, Ordering::SeqCst) >= 2)), ..session_opts() };
    let mut s = m.session(opts).unwrap();
    let e = s.eval(&m.tokenize("Once upon a time", Flags::ADD_BOS).unwrap()).unwrap_err();
    assert_eq!(e.status(), Status::Cancelled);
    assert_eq!((s.position(), calls.load(Ordering::SeqCst)), (0, 3));
}

#[test]
fn a_panic_in_a_callback_reaches_the_caller() {
    let m = stories!();
    let mut s = m.session(session_opts()).unwrap();
    s.eval(&[1]).unwrap();
    let mut smp = Sampler::new(&SamplerOptions::default()).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = s.generate_with(&mut smp, &GenerateOptions::default(), |_, _| panic!("boom"));
    }));
    assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "boom");
    assert_eq!(s.position(), 1); // stopped at the first token
}

const PROMPTS: [&str; 4] = ["Once upon a time", "Tom and Sue went to the", "The little dog", "Lily had a red ball."];

#[test]
fn engine_sequences_equal_sessions() {
    let m = stories!();
    let engine = m.engine(engine_opts(4)).unwrap();
    assert!(engine.describe().unwrap().contains("4 slots"));
    assert!(engine.n_threads() >= 1);
    let (md, mn, mx) = engine.read_bandwidth(32 << 20, 3).unwrap();
    assert!(mn > 0.0 && mn <= md && md <= mx, "{md} {mn} {mx}");
    const N: usize = 24;
    type Stream = Rc<RefCell<(Vec<Token>, String)>>;
    let streamed: Vec<Stream> = (0..PROMPTS.len()).map(|_| Default::default()).collect();
    let opts = GenerateOptions { max_tokens: N as i32, stop_at_eos: false };
    let mut seqs = Vec::new();
    for (i, p) in PROMPTS.iter().enumerate() {
        let mut seq = engine.sequence().unwrap();
        seq.add_text(p, Flags::ADD_BOS).unwrap();
        if i % 2 == 0 {
            // Half stream through callbacks, half are polled.
            let out = streamed[i].clone();
            let eng = &engine;
            seq.generate_with(&SamplerOptions::greedy(), &opts, move |t, text| {
                let mut o = out.borrow_mut();
                o.0.extend(t);
                o.1.push_str(text);
                // Changing the engine from inside a callback is refused.
                assert_eq!(eng.sequence().err().map(|e| e.status()), Some(Status::InvalidArgument));
                assert!(eng.step().is_err());
                true
            })
            .unwrap();
        } else {
            seq.generate(&SamplerOptions::greedy(), &opts).unwrap();
        }
        assert_eq!(seq.state(), SequenceState::Prefill);
        seqs.push(seq);
    }
    let mut steps = 0;
    while engine.step().unwrap() > 0 {
        steps += 1;
        assert!(steps < 10 * N, "the engine does not finish");
    }
    for (i, p) in PROMPTS.iter().enumerate() {
        let want = greedy_alone(&m, &m.tokenize(p, Flags::ADD_BOS).unwrap(), N);
        assert_eq!(seqs[i].generated().unwrap(), want, "{}", p);
        assert_eq!((seqs[i].state(), seqs[i].stop_reason()), (SequenceState::Finished, StopReason::MaxTokens));
        if i % 2 == 0 {
            let o = streamed[i].borrow();
            assert_eq!(o.0, want);
            assert_eq!(o.1, m.detokenize(&want, Flags::NONE).unwrap());
        }
    }
    assert!(format!("{}{}", PROMPTS[0], streamed[0].borrow().1).starts_with(LILY));
}

#[test]
fn a_sequence_saved_mid_generation_resumes_with_the_same_tokens() {
    let m = stories!();
    let file = std::env::temp_dir().join(format!("brisk-rust-seq-{}.state", std::process::id()));
    let sampling = SamplerOptions { temperature: 0.8, top_k: 40, seed: 7, ..Default::default() };
    let opts = GenerateOptions { max_tokens: 30, stop_at_eos: false };
    let want = {
        let engine = m.engine(engine_opts(2)).unwrap();
        let mut seq = engine.sequence().unwrap();
        seq.add_text("Once upon a time", Flags::ADD_BOS).unwrap();
        seq.generate(&sampling, &opts).unwrap();
        while seq.generated().unwrap().len() < 10 {
            engine.step().unwrap();
        }
        seq.save_state(&file).unwrap();
        engine.run().unwrap();
        seq.generated().unwrap()
    };
    assert_eq!(want.len(), 30);
    let other = Model::open(test_file("models/stories260K.gguf").unwrap()).unwrap(); // as another process
    let engine = other.engine(engine_opts(2)).unwrap();
    let mut seq = engine.load_sequence(&file).unwrap();
    assert_eq!(seq.state(), SequenceState::Prefill);
    let after = Rc::new(RefCell::new(Vec::new()));
    let sink = after.clone();
    seq.resume_with(move |tok, _| {
        sink.borrow_mut().extend(tok);
        true
    })
    .unwrap();
    engine.run().unwrap();
    assert_eq!(seq.generated().unwrap(), want);
    assert_eq!(&after.borrow()[..], &want[10..]);
    assert_eq!(seq.resume().unwrap_err().status(), Status::InvalidArgument);
    let _ = std::fs::remove_file(&file);
}

#[test]
fn forks_share_a_prefix() {
    let m = stories!();
    let engine = m.engine(engine_opts(4)).unwrap();
    let prefix = "Once upon a time, there was a";
    let mut root = engine.sequence().unwrap();
    root.add_text(prefix, Flags::ADD_BOS).unwrap();
    engine.run().unwrap();
    let prefix_ids = m.tokenize(prefix, Flags::ADD_BOS).unwrap();
    assert_eq!((root.state(), root.position() as usize), (SequenceState::Idle, prefix_ids.len()));
    const N: usize = 16;
    let suffixes = [" dog", " little boy", " big tree"];
    let opts = GenerateOptions { max_tokens: N as i32, stop_at_eos: false };
    let mut forks = Vec::new();
    for sfx in suffixes {
        let mut f = root.fork().unwrap();
        f.add_tokens(&m.tokenize(sfx, Flags::NONE).unwrap()).unwrap();
        f.generate(&SamplerOptions::greedy(), &opts).unwrap();
        forks.push(f);
    }
    drop(root); // the forks run on without it
    engine.run().unwrap();
    for (f, sfx) in forks.iter().zip(suffixes) {
        let mut prompt = prefix_ids.clone();
        prompt.extend(m.tokenize(sfx, Flags::NONE).unwrap());
        assert_eq!(f.generated().unwrap(), greedy_alone(&m, &prompt, N), "{}", sfx);
    }
}

#[test]
fn a_sequence_dropped_inside_a_callback_is_freed_after_the_step() {
    let m = stories!();
    let engine = m.engine(engine_opts(2)).unwrap();
    let victim = Rc::new(RefCell::new(None));
    let mut b = engine.sequence().unwrap();
    b.add_text("The little dog", Flags::ADD_BOS).unwrap();
    let opts = GenerateOptions { max_tokens: 8, stop_at_eos: false };
    let b_calls = Rc::new(RefCell::new(0));
    let bc = b_calls.clone();
    b.generate_with(&SamplerOptions::greedy(), &opts, move |_, _| {
        *bc.borrow_mut() += 1;
        true
    })
    .unwrap();
    *victim.borrow_mut() = Some(b);
    let mut a = engine.sequence().unwrap();
    a.add_text("The little dog", Flags::ADD_BOS).unwrap();
    let v = victim.clone();
    a.generate_with(&SamplerOptions::greedy(), &opts, move |_, _| {
        v.borrow_mut().take(); // drops b in the middle of a step
        true
    })
    .unwrap();
    engine.run().unwrap();
    assert_eq!(a.generated().unwrap().len(), 8);
    assert!(victim.borrow().is_none());
    assert!(*b_calls.borrow() <= 1, "b's callback ran after it was dropped");
    drop(a);
    // Both slots are free again.
    let _c = engine.sequence().unwrap();
    let _d = engine.sequence().unwrap();
}

#[test]
fn model_is_shared_across_threads() {
    let m = stories!();
    let want = m.tokenize("Sam was sad because the sun was hot.", Flags::ADD_BOS).unwrap();
    let m = Arc::new(m);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            let want = want.clone();
            std::thread::spawn(move || {
                for _ in 0..100 {
                    assert_eq!(m.tokenize("Sam was sad because the sun was hot.", Flags::ADD_BOS).unwrap(), want);
                }
                // A session made and used on another thread.
                let mut s = m.session(session_opts()).unwrap();
                s.eval(&want).unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Sessions move between threads (Send), borrowing the model (scoped).
    let m: &Model = &m;
    let mut s = m.session(session_opts()).unwrap();
    s.eval(&[1]).unwrap();
    let s = std::thread::scope(|sc| {
        sc.spawn(move || {
            s.eval(&[100]).unwrap();
            s
        })
        .join()
        .unwrap()
    });
    assert_eq!(s.position(), 2);
}

#[test]
fn synthetic_models() {
    let shapes = brisk::synthetic_shapes().unwrap();
    assert!(shapes.iter().any(|s| s == "tiny"), "{:?}", shapes);
    let so = SynthesizeOptions { n_threads: 2, ..Default::default() };
    assert_eq!((so.shape.as_str(), so.weight_type.as_str()), ("tiny", "q4_0"));
    let logged = Arc::new(AtomicUsize::new(0));
    let l = logged.clone();
    let mo = ModelOptions {
        log: Some(Box::new(move |_, _| {
            l.fetch_add(1, Ordering::SeqCst);
        })),
        log_level: LogLevel::Info,
        ..Default::default()
    };
    let m = Model::open_synthetic(&so, mo).unwrap();
    assert!(m.n_vocab() > 0);
    assert_eq!(m.weight_type().unwrap(), "q4_0");
    assert!(logged.load(Ordering::SeqCst) > 0);
    let bad = SynthesizeOptions { shape: "no-such-shape".into(), ..so.clone() };
    assert!(Model::open_synthetic(&bad, ModelOptions::default()).is_err());
    let path = std::env::temp_dir().join(format!("brisk-rust-test-{}.gguf", std::process::id()));
    brisk::synthesize_model(&path, &so).unwrap();
    let opened = Model::open(&path);
    let _ = std::fs::remove_file(&path);
    opened.unwrap();
}

#[test]
fn type_names_round_trip() {
    use brisk::Type;
    let all = Type::ALL;
    let mut seen = std::collections::HashSet::new();
    for t in all {
        let name = t.name();
        assert!(name != "?" && name == name.to_lowercase() && seen.insert(name), "{:?}: {:?}", t, name);
        assert_eq!(Type::from_name(name).unwrap(), t);
        assert_eq!(Type::from_name(&name.to_uppercase()).unwrap(), t);
        assert_eq!(t.to_string(), name);
    }
    assert_eq!((Type::Q4_0.name(), Type::Auto.name(), Type::F16.name()), ("q4_0", "auto", "f16"));
    let e = Type::from_name("q3_xs").unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().contains("q8_0"), "{}", e);
    assert_eq!(Type::from_name("q4\0_0").unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn physical_cores_and_max_sequences() {
    let cores = brisk::physical_cores();
    assert!(cores >= 1 && cores <= 1 << 16, "{} cores", cores);
    let m = stories!();
    // stories260K fits 4 slots easily.
    assert_eq!(m.max_sequences(&engine_opts(4)).unwrap(), 4);
    let n = m.max_sequences(&EngineOptions::default()).unwrap();
    assert!(n >= 1 && n <= EngineOptions::default().n_seq_max, "{}", n);
    assert_eq!(m.max_sequences(&EngineOptions { memory_budget: 4096, ..engine_opts(4) }).unwrap(), 0);
}

#[test]
fn model_identity_is_32_hex_digits_per_file() {
    let a = stories!();
    let b = Model::open(test_file("models/stories260K.gguf").unwrap()).unwrap();
    let id = a.identity().unwrap();
    assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()), "{:?}", id);
    assert_eq!(b.identity().unwrap(), id);
    let synth = Model::open_synthetic(&SynthesizeOptions::default(), ModelOptions::default()).unwrap();
    let other = synth.identity().unwrap();
    assert!(other.len() == 32 && other != id, "{} vs {}", other, id);
}

#[test]
fn chat_render_with_options() {
    use brisk::ChatOptions;
    let m = stories!();
    let d = ChatOptions::default();
    assert_eq!((d.template.as_deref(), d.add_assistant, d.allow_control_tokens), (None, true, false));
    let msgs = [ChatMessage { role: "system", content: "Be brief." }, ChatMessage { role: "user", content: "Hi" }];
    for add in [true, false] {
        let o = ChatOptions { template: Some("chatml".into()), add_assistant: add, ..Default::default() };
        assert_eq!(m.chat_render_with(&msgs, &o).unwrap(), m.chat_render(Some("chatml"), &msgs, add).unwrap());
    }
    // The defaults: the model's own template, which stories260K has not.
    assert_eq!(m.chat_render_with(&msgs, &ChatOptions::default()).unwrap_err().status(), Status::Unsupported);
    // Control-token text in a message is refused unless allowed.
    let forged = [ChatMessage { role: "user", content: "Hi</s><s>" }];
    assert_eq!(m.chat_render(Some("chatml"), &forged, true).unwrap_err().status(), Status::InvalidArgument);
    let mut o = ChatOptions { template: Some("chatml".into()), ..Default::default() };
    assert_eq!(m.chat_render_with(&forged, &o).unwrap_err().status(), Status::InvalidArgument);
    o.allow_control_tokens = true;
    assert!(m.chat_render_with(&forged, &o).unwrap().contains("Hi</s><s>"));
}

fn generate_ids(s: &mut brisk::Session, smp: &mut Sampler, n: i32) -> Vec<Token> {
    let mut out = Vec::new();
    let g = s
        .generate_with(smp, &GenerateOptions { max_tokens: n, stop_at_eos: false }, |t, _| {
            out.extend(t);
            true
        })
        .unwrap();
    assert_eq!(g.n_generated, n as usize);
    out
}

#[test]
fn a_session_saved_and_loaded_on_another_handle_continues_the_same() {
    let m = stories!();
    let dir = std::env::temp_dir();
    let file = dir.join(format!("brisk-rust-session-{}.state", std::process::id()));
    let greedy_file = dir.join(format!("brisk-rust-session-greedy-{}.state", std::process::id()));
    let bad = dir.join(format!("brisk-rust-session-damaged-{}.state", std::process::id()));
    let sampling = SamplerOptions { temperature: 0.8, top_k: 40, seed: 7, ..Default::default() };
    let (saved, want, want_greedy) = {
        let mut s = m.session(session_opts()).unwrap();
        let mut smp = Sampler::new(&sampling).unwrap();
        let prompt = m.tokenize("Once upon a time", Flags::ADD_BOS).unwrap();
        s.eval(&prompt).unwrap();
        let mut saved = prompt.clone();
        saved.extend(generate_ids(&mut s, &mut smp, 12));
        assert_eq!(s.position() as usize, saved.len());
        // The token count must equal the position.
        let e = s.save_state(Some(&smp), &saved[..saved.len() - 1], &file).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        s.save_state(Some(&smp), &saved, &file).unwrap();
        s.save_state(None, &saved, &greedy_file).unwrap();
        let want = generate_ids(&mut s, &mut smp, 20);
        (saved.clone(), want, greedy_alone(&m, &saved, 20))
    };
    assert_eq!(brisk::state_file_tokens(&file).unwrap(), saved);

    let other = Model::open(test_file("models/stories260K.gguf").unwrap()).unwrap(); // as another process
    let mut s = other.session(session_opts()).unwrap();
    let mut smp = Sampler::new(&sampling).unwrap(); // fresh: its state comes from the file
    s.load_state(Some(&mut smp), &file).unwrap();
    assert_eq!(s.position() as usize, saved.len());
    assert_eq!(generate_ids(&mut s, &mut smp, 20), want);
    // Without a sampler state: the same greedy continuation.
    let mut g = other.session(session_opts()).unwrap();
    g.load_state(None, &greedy_file).unwrap();
    let mut greedy = Sampler::new(&SamplerOptions::greedy()).unwrap();
    assert_eq!(generate_ids(&mut g, &mut greedy, 20), want_greedy);

    // A damaged file is refused and changes nothing.
    let mut data = std::fs::read(&file).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x40;
    std::fs::write(&bad, &data).unwrap();
    let pos = g.position();
    assert_eq!(g.load_state(None, &bad).unwrap_err().status(), Status::Checksum);
    assert_eq!(g.position(), pos);
    assert_eq!(brisk::state_file_tokens(&bad).unwrap_err().status(), Status::Checksum);
    assert_eq!(brisk::state_file_tokens(dir.join("brisk-no-such.state")).unwrap_err().status(), Status::NotFound);
    for f in [&file, &greedy_file, &bad] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn a_truncated_sequence_continues_as_a_fresh_one() {
    let m = stories!();
    let engine = m.engine(engine_opts(2)).unwrap();
    let shared = m.tokenize("Once upon a time, there was a", Flags::ADD_BOS).unwrap();
    let other =
        m.tokenize("Once upon a time, there was a dog named Max", Flags::ADD_BOS).unwrap()[shared.len()..].to_vec();
    let mine = m.tokenize(" little cat", Flags::NONE).unwrap();
    let mut seq = engine.sequence().unwrap();
    seq.add_tokens(&[&shared[..], &other[..]].concat()).unwrap();
    engine.run().unwrap();
    assert_eq!((seq.state(), seq.position() as usize), (SequenceState::Idle, shared.len() + other.len()));
    assert_eq!(seq.truncate(seq.position() + 1).unwrap_err().status(), Status::InvalidArgument);
    seq.truncate(shared.len() as u32).unwrap();
    assert_eq!(seq.position() as usize, shared.len());
    seq.add_tokens(&mine).unwrap();
    const N: usize = 20;
    seq.generate(&SamplerOptions::greedy(), &GenerateOptions { max_tokens: N as i32, stop_at_eos: false }).unwrap();
    engine.run().unwrap();
    assert_eq!(seq.generated().unwrap(), greedy_alone(&m, &[&shared[..], &mine[..]].concat(), N));
    assert_eq!(seq.truncate(0).unwrap_err().status(), Status::InvalidArgument);
}
