// SPDX-License-Identifier: MIT
// Finds libbrisk: $BRISK_LIB_DIR if set, else `pkg-config --libs brisk`
// (which picks up brisk-uninstalled.pc from a build tree when
// PKG_CONFIG_PATH points at <build>/capi). No outside crates.
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["BRISK_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }

    if let Ok(dir) = env::var("BRISK_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:rustc-link-lib=dylib=brisk");
            println!("cargo:libdir={}", dir);
            return;
        }
    }

    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = match Command::new(&pkg_config).args(["--libs", "brisk"]).output() {
        Ok(o) => o,
        Err(e) => {
            // No pkg-config at all: hope libbrisk is on the default path.
            println!(
                "cargo:warning=could not run {} ({}); linking -lbrisk from the default search path",
                pkg_config, e
            );
            println!("cargo:rustc-link-lib=dylib=brisk");
            return;
        }
    };
    if !output.status.success() {
        panic!(
            "`{} --libs brisk` failed: {}\n\
             Install brisk (its brisk.pc), or point PKG_CONFIG_PATH at a build tree's capi \
             directory (brisk-uninstalled.pc), or set BRISK_LIB_DIR to the directory of libbrisk.so.",
            pkg_config,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let libs = String::from_utf8_lossy(&output.stdout).to_string();
    let mut rpaths = Vec::new();
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:libdir={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
        } else if let Some(dir) = flag.strip_prefix("-Wl,-rpath,") {
            rpaths.push(dir.to_string());
        }
    }
    if !rpaths.is_empty() {
        // An uninstalled brisk asks for an rpath. Link arguments reach only
        // this crate's own tests, so the path is also published as
        // DEP_BRISK_RPATH for the crates that depend on this one.
        for dir in &rpaths {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        }
        println!("cargo:rpath={}", rpaths.join(":"));
    }
}
