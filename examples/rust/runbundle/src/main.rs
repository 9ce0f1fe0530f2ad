// SPDX-License-Identifier: MIT
//! runbundle: verify a .brisk bundle, unpack it and run four prompts on it
//! at once.
//!
//!     cargo run -- MODEL.brisk [N_TOKENS]
//!
//! The bundle's checksums are verified before anything is written; the
//! unpacked GGUF (checked again as it streams) lives in a temporary
//! directory that is removed at the end. One engine then runs four
//! sequences, one per prompt: every `Engine::step` is one forward pass for
//! all of them, so the weights are read once per step, not once per prompt.
//! Each sequence streams its text through a token callback and stops at the
//! end of the line.
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use brisk::{EngineOptions, Flags, GenerateOptions, Hooks, Model, PackOptions, SamplerOptions, VerifyOptions};

// Log lines in the style of the systems the bundle was calibrated on, and a story.
const PROMPTS: [&str; 4] = [
    "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure;",
    "081109 203615 148 INFO dfs.DataNode$PacketResponder:",
    "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 RAS KERNEL INFO",
    "Once upon a time,",
];

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn progress(p: &brisk::Progress<'_>) {
    if p.done == p.total {
        eprintln!("  {} done", p.stage);
    }
}

fn run(bundle: &Path, n: i32) -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("verifying {}", bundle.display());
    let bytes = brisk::verify(
        bundle,
        &VerifyOptions::default(),
        Hooks::new()
            .on_progress(progress)
            .on_mismatch(|m| eprintln!("  mismatch: {}: {}", m.location, m.detail)),
    )?;
    eprintln!("  {} bytes checked", bytes);

    let dir = TempDir(std::env::temp_dir().join(format!("brisk-runbundle-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    let gguf = dir.0.join("model.gguf");
    brisk::unpack(bundle, &gguf, &PackOptions::default(), Hooks::new().on_progress(progress))?;

    let model = Model::open(&gguf)?;
    eprintln!("{}", model.describe()?);
    let engine = model.engine(EngineOptions { n_ctx: 256, n_seq_max: PROMPTS.len() as u32, ..Default::default() })?;

    // Declared before the sequences, whose callbacks borrow them.
    let texts: Vec<RefCell<String>> = PROMPTS.iter().map(|_| RefCell::new(String::new())).collect();
    let options = GenerateOptions { max_tokens: n, ..Default::default() };
    let mut seqs = Vec::new();
    for (prompt, text) in PROMPTS.iter().zip(&texts) {
        let mut seq = engine.sequence()?;
        seq.add_text(prompt, Flags::ADD_BOS)?;
        seq.generate_with(&SamplerOptions::greedy(), &options, move |_token, piece| {
            let mut t = text.borrow_mut();
            match piece.find('\n') {
                Some(end) => {
                    t.push_str(&piece[..end]);
                    false // the line is complete: stop this sequence
                }
                None => {
                    t.push_str(piece);
                    true
                }
            }
        })?;
        seqs.push(seq);
    }

    let mut steps = 1;
    while engine.step()? > 0 {
        steps += 1;
    }
    for (i, (prompt, text)) in PROMPTS.iter().zip(&texts).enumerate() {
        println!("[{}] {}{}", i, prompt, text.borrow());
    }
    eprintln!("{} steps for {} sequences", steps, seqs.len());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: {} MODEL.brisk [N_TOKENS]", args[0]);
        return ExitCode::from(2);
    }
    let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(48);
    match run(Path::new(&args[1]), n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("runbundle: {}", e);
            ExitCode::FAILURE
        }
    }
}
