// SPDX-License-Identifier: Apache-2.0
//! Finds liblinfer: pkg-config first (an installed library, or PKG_CONFIG_PATH pointing at one),
//! else builds it from the linfer source tree this crate sits in (or LINFER_SOURCE_DIR) with the
//! cmake crate, into OUT_DIR. LINFER_SYS_BUILD_FROM_SOURCE=1 skips pkg-config.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=LINFER_SYS_BUILD_FROM_SOURCE");
    println!("cargo:rerun-if-env-changed=LINFER_SOURCE_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let from_source = env::var("LINFER_SYS_BUILD_FROM_SOURCE").map(|v| v == "1").unwrap_or(false);
    if !from_source {
        match pkg_config::Config::new().atleast_version("0.1").probe("linfer") {
            Ok(lib) => {
                for dir in &lib.link_paths {
                    println!("cargo:libdir={}", dir.display());
                }
                return;
            }
            Err(e) => {
                let reason = e.to_string().lines().next().unwrap_or("").to_string();
                println!("cargo:warning=linfer not found through pkg-config ({reason}); building it from source")
            }
        }
    }
    let source = env::var_os("LINFER_SOURCE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap()).join("../../..")
    });
    if !source.join("runtime/include/linfer/linfer.h").exists() {
        panic!(
            "linfer-sys: no installed linfer (pkg-config) and no linfer source tree at {} (set LINFER_SOURCE_DIR)",
            source.display()
        );
    }
    let dst = cmake::Config::new(&source)
        .define("LINFER_BUILD_TESTS", "OFF")
        .define("LINFER_BUILD_TOOLS", "OFF")
        .define("BUILD_SHARED_LIBS", "ON")
        .define("CMAKE_INSTALL_LIBDIR", "lib")
        .build();
    let libdir = dst.join("lib");
    println!("cargo:rustc-link-search=native={}", libdir.display());
    println!("cargo:rustc-link-lib=dylib=linfer");
    println!("cargo:libdir={}", libdir.display());
    println!("cargo:rerun-if-changed={}", source.join("runtime").display());
}
