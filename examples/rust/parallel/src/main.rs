// SPDX-License-Identifier: MIT
//! parallel: one thread drives four sequences through a brisk engine.
//!
//!     cargo run -- MODEL.gguf [N_TOKENS]
//!
//! A shared prefix is evaluated once and forked four times; each fork gets
//! its own continuation. Every `Engine::step` is one forward pass over all
//! of them. Two sequences stream through token callbacks, two are polled
//! with `Sequence::generated` — both styles work on the same engine.
use std::cell::RefCell;
use std::process::ExitCode;

use brisk::{EngineOptions, Flags, GenerateOptions, Model, SamplerOptions};

const PREFIX: &str = "Once upon a time, there was a";
const SUFFIXES: [&str; 4] = [" little girl", " big dog", " boy named", " tree"];

fn run(path: &str, n: i32) -> brisk::Result<()> {
    let model = Model::open(path)?;
    let engine = model.engine(EngineOptions { n_ctx: 256, n_seq_max: 5, ..Default::default() })?;

    // The prefix, evaluated once.
    let mut root = engine.sequence()?;
    root.add_text(PREFIX, Flags::ADD_BOS)?;
    engine.run()?;

    // Declared before the sequences, whose callbacks borrow them.
    let texts: Vec<RefCell<String>> = SUFFIXES.iter().map(|_| RefCell::new(String::new())).collect();
    let options = GenerateOptions { max_tokens: n, ..Default::default() };
    let mut seqs = Vec::new();
    for (i, suffix) in SUFFIXES.iter().enumerate() {
        let mut seq = root.fork()?;
        seq.add_text(suffix, Flags::NONE)?;
        if i % 2 == 0 {
            let text = &texts[i];
            seq.generate_with(&SamplerOptions::greedy(), &options, move |_token, piece| {
                text.borrow_mut().push_str(piece);
                true // keep going
            })?;
        } else {
            seq.generate(&SamplerOptions::greedy(), &options)?;
        }
        seqs.push(seq);
    }
    drop(root); // the forks have their own copy of the prefix

    let mut steps = 0;
    while engine.step()? > 0 {
        steps += 1;
    }

    for (i, seq) in seqs.iter().enumerate() {
        let text = if i % 2 == 0 { texts[i].borrow().clone() } else { model.detokenize(&seq.generated()?, Flags::NONE)? };
        println!("[{}] {}{}{}", i, PREFIX, SUFFIXES[i], text);
    }
    eprintln!("{} steps for {} sequences", steps + 1, seqs.len());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: {} MODEL.gguf [N_TOKENS]", args[0]);
        return ExitCode::from(2);
    }
    let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(32);
    match run(&args[1], n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e);
            ExitCode::FAILURE
        }
    }
}
