// SPDX-License-Identifier: MIT
// What the integration tests share: finding ../shared test data (missing
// data skips a test, except under CI=true, where it fails) and scratch
// directories. Each test crate uses part of it.
#![allow(dead_code, unused_macros)]
use std::path::PathBuf;

pub fn test_file(rel: &str) -> Option<PathBuf> {
    let root = std::env::var("BRISK_TEST_DATA")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("BRISK_DEFAULT_TEST_DATA").ok().filter(|s| !s.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared"));
    let path = root.join(rel);
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").map_or(false, |v| v == "true") {
        panic!("missing test data under CI: {}", path.display());
    }
    eprintln!("skipped: test data not found: {} (set BRISK_TEST_DATA)", path.display());
    None
}

macro_rules! data {
    ($rel:expr) => {
        match common::test_file($rel) {
            Some(p) => p,
            None => return,
        }
    };
}

/// A scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("brisk-rust-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
