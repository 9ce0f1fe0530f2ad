// SPDX-License-Identifier: MIT
// brisk-sys found an uninstalled libbrisk that wants an rpath: give this
// crate's integration tests the same rpath, so `cargo test` runs against a
// build tree without LD_LIBRARY_PATH.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_BRISK_RPATH");
    if let Ok(rpath) = std::env::var("DEP_BRISK_RPATH") {
        for dir in rpath.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir);
        }
    }
}
