//! Versions for the hello message, fixed when the driver is built: every crate's version from
//! the workspace's Cargo.lock (what was really compiled in), and the compiler's version.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let lock = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_else(|e| panic!("{}: {e}", lock.display()));

    // [[package]] blocks: name = "...", version = "..."
    let mut locked = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines() {
        let value = |key: &str| line.strip_prefix(key).map(|v| v.trim().trim_matches('"').to_string());
        if line.starts_with("[[package]]") {
            name = None;
        } else if let Some(n) = value("name = ") {
            name = Some(n);
        } else if let (Some(v), Some(n)) = (value("version = "), name.take()) {
            locked.push((n, v));
        }
    }

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(&rustc).arg("--version").output().expect("rustc --version");
    let version = String::from_utf8_lossy(&output.stdout);
    // "rustc 1.95.0 (59807616e 2026-04-14)" -> "1.95.0"
    let version = version.split_whitespace().nth(1).unwrap_or("?").to_string();

    let mut out =
        String::from("/// (crate, version) for every package in Cargo.lock\npub static LOCKED: &[(&str, &str)] = &[\n");
    for (n, v) in &locked {
        writeln!(out, "    ({n:?}, {v:?}),").unwrap();
    }
    writeln!(out, "];\n/// the rustc that built this driver\npub static RUSTC: &str = {version:?};").unwrap();
    std::fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("versions.rs"), out).unwrap();
}
