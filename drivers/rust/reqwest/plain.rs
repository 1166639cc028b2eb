//! The plain loop of rust-reqwest (docs/driver-protocol.md §9): one `reqwest::blocking::Client`
//! (`Client::new()`, reqwest's defaults), `get(url).send()` and `bytes()` as reqwest's docs show
//! them; close mode: `pool_max_idle_per_host(0)`, as the driver does for keep_alive false.
//! Usage: plain URL COUNT MODE WARMUP_S (MODE keep-alive or close).

use std::time::{Duration, Instant};

use reqwest::blocking::Client;

fn main() {
    let (url, count, close, warmup) = args();
    // this workspace builds reqwest's rustls without a crypto provider of its own (no aws-lc-rs):
    // ring is installed as the process's default, as rustls' docs show
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = if close { Client::builder().pool_max_idle_per_host(0).build() } else { Ok(Client::new()) }
        .unwrap_or_else(|e| fail(format!("building the client: {e}")));
    let get = || -> usize {
        let resp = client.get(&url).send().unwrap_or_else(|e| fail(format!("GET {url}: {e}")));
        if resp.status() != reqwest::StatusCode::OK {
            fail(format!("GET {url}: status {}", resp.status().as_u16()));
        }
        resp.bytes().unwrap_or_else(|e| fail(format!("GET {url}: reading the body: {e}"))).len()
    };

    let end = Instant::now() + warmup;
    while Instant::now() < end {
        get();
    }
    let start = Instant::now();
    let total: usize = (0..count).map(|_| get()).sum();
    let seconds = start.elapsed().as_secs_f64();
    println!("{{\"requests\": {count}, \"bytes\": {total}, \"seconds\": {seconds:.6}}}");
}

/// URL, COUNT, close mode or not, WARMUP_S.
fn args() -> (String, usize, bool, Duration) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 4 || !matches!(args[2].as_str(), "keep-alive" | "close") {
        fail("usage: plain URL COUNT keep-alive|close WARMUP_S".into());
    }
    let count = args[1].parse().unwrap_or_else(|_| fail(format!("COUNT must be a whole number >= 0, not {}", args[1])));
    let warmup = args[3].parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok());
    let warmup = warmup.unwrap_or_else(|| fail(format!("WARMUP_S must be a number of seconds >= 0, not {}", args[3])));
    (args[0].clone(), count, args[2] == "close", warmup)
}

fn fail(message: String) -> ! {
    eprintln!("plain rust-reqwest: {message}");
    std::process::exit(1)
}
