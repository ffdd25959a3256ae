//! Compiles every `bpf/*.bpf.c` (and with the `testing` feature every
//! `bpf/testing/*.bpf.c`) into a libbpf-rs skeleton under OUT_DIR.
//!
//! `bpf/vmlinux.h` is committed (generated once with bpftool on x86_64), so
//! a build needs clang and libbpf headers (shipped by libbpf-sys) but never
//! BTF from the build machine's kernel.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

/// `git` in the crate's directory, trimmed stdout, or `None`.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// The commit for `--version`: "unknown" when building from a tarball (no
/// .git, or a .git of some enclosing repository that is not this crate's).
/// Reruns when HEAD or the branch it points to moves.
fn git_hash() -> String {
    let top = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let ours = top.is_some_and(|t| {
        t.canonicalize().ok() == Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().ok()
    });
    if !ours {
        return "unknown".into();
    }
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &w])
            && Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
}

fn main() {
    println!("cargo:rustc-env=NETTOP_GIT_HASH={}", git_hash());
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("OUT_DIR is not set: build.rs runs under cargo only");
    };
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    // bpf/testing/ holds the objects only tests, benchmarks and examples
    // load (an XDP pass program, the tracing-floor programs): built with
    // the `testing` feature, which only they enable, so a release build
    // never compiles them.
    // The same feature compiles the collector's test hooks (a fake clock)
    // into nettop.bpf.c: -DNETTOP_TESTING.
    let testing = env::var_os("CARGO_FEATURE_TESTING").is_some();
    let mut dirs = vec!["bpf"];
    if testing {
        dirs.push("bpf/testing");
    }
    let mut srcs: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap_or_else(|e| panic!("{d}/: {e}")))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    srcs.sort();
    for src in srcs {
        let stem = src
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".bpf.c"))
            .unwrap_or_else(|| panic!("{}: not a NAME.bpf.c source", src.display()))
            .to_string();
        let skel = out.join(format!("{stem}.skel.rs"));
        let mut args = vec![
            format!("-D__TARGET_ARCH_{target_arch}"),
            "-Ibpf".to_string(),
            "-I/usr/include/x86_64-linux-gnu".to_string(),
            "-Wall".to_string(),
            "-Wno-unused-function".to_string(),
        ];
        if testing {
            args.push("-DNETTOP_TESTING".to_string());
        }
        SkeletonBuilder::new()
            .source(&src)
            .clang_args(args)
            .build_and_generate(&skel)
            .unwrap_or_else(|e| panic!("building BPF skeleton for {}: {e:#}", src.display()));
        println!("cargo:rerun-if-changed={}", src.display());
    }
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-changed=bpf/testing");
}
