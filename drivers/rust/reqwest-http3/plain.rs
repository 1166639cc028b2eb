//! The plain loop of rust-reqwest-http3 (docs/driver-protocol.md §9): one async
//! `reqwest::Client` on tokio's multi-threaded runtime (what `#[tokio::main]` builds: this
//! workspace's tokio has no `macros` feature, so the runtime is built as that macro expands).
//! With a CA (an https URL on the bench server's HTTP/3 port): `http3_prior_knowledge()`,
//! trusting that CA (`tls_certs_only`), and every request asking for HTTP/3
//! (`.version(Version::HTTP_3)`), as reqwest's http3 docs show it; without one, `Client::new()`
//! (the driver's other versions are rust-reqwest-async's). `get(url).send().await` and
//! `bytes().await`; close mode (not over HTTP/3: reqwest keeps every HTTP/3 connection):
//! `pool_max_idle_per_host(0)`, as the driver does for keep_alive false.
//! Usage: plain URL COUNT MODE WARMUP_S [CA] (MODE keep-alive or close).

use std::time::{Duration, Instant};

use reqwest::{Certificate, Client, Version};

fn main() {
    let (url, count, close, warmup, ca) = args();
    // this workspace builds reqwest's rustls without a crypto provider of its own: ring is
    // installed as the process's default, as rustls' docs show
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build();
    let runtime = runtime.unwrap_or_else(|e| fail(format!("starting tokio: {e}")));
    runtime.block_on(async {
        let client = match (&ca, close) {
            (Some(_), true) => fail("reqwest keeps every HTTP/3 connection for reuse: no close mode".into()),
            (Some(ca), false) => {
                let pem = std::fs::read(ca).unwrap_or_else(|e| fail(format!("{ca}: {e}")));
                let certs = Certificate::from_pem_bundle(&pem).unwrap_or_else(|e| fail(format!("{ca}: {e}")));
                Client::builder().http3_prior_knowledge().tls_certs_only(certs).build()
            }
            (None, true) => Client::builder().pool_max_idle_per_host(0).build(),
            (None, false) => Ok(Client::new()),
        }
        .unwrap_or_else(|e| fail(format!("building the client: {e}")));
        let get = async || -> usize {
            let mut request = client.get(&url);
            if ca.is_some() {
                request = request.version(Version::HTTP_3); // else reqwest sends it over TCP
            }
            let resp = request.send().await.unwrap_or_else(|e| fail(format!("GET {url}: {e}")));
            if resp.status() != reqwest::StatusCode::OK {
                fail(format!("GET {url}: status {}", resp.status().as_u16()));
            }
            resp.bytes().await.unwrap_or_else(|e| fail(format!("GET {url}: reading the body: {e}"))).len()
        };

        let end = Instant::now() + warmup;
        while Instant::now() < end {
            get().await;
        }
        let start = Instant::now();
        let mut total = 0;
        for _ in 0..count {
            total += get().await;
        }
        let seconds = start.elapsed().as_secs_f64();
        println!("{{\"requests\": {count}, \"bytes\": {total}, \"seconds\": {seconds:.6}}}");
    });
}

/// URL, COUNT, close mode or not, WARMUP_S, and the CA file of an HTTP/3 URL.
fn args() -> (String, usize, bool, Duration, Option<String>) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !(4..=5).contains(&args.len()) || !matches!(args[2].as_str(), "keep-alive" | "close") {
        fail("usage: plain URL COUNT keep-alive|close WARMUP_S [CA]".into());
    }
    let count = args[1].parse().unwrap_or_else(|_| fail(format!("COUNT must be a whole number >= 0, not {}", args[1])));
    let warmup = args[3].parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok());
    let warmup = warmup.unwrap_or_else(|| fail(format!("WARMUP_S must be a number of seconds >= 0, not {}", args[3])));
    (args[0].clone(), count, args[2] == "close", warmup, args.get(4).cloned())
}

fn fail(message: String) -> ! {
    eprintln!("plain rust-reqwest-http3: {message}");
    std::process::exit(1)
}
