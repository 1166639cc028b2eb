//! clientlab driver rust-reqwest-http3: rust-reqwest-async (one async `reqwest::Client` for the
//! job on a tokio multi-threaded runtime, up to `concurrency` requests in flight) built with
//! reqwest's unstable `http3` feature. An `http: "3"` job gets a client with
//! `http3_prior_knowledge` (QUIC with ALPN h3 only) and every request asks for HTTP/3, so none
//! can go over TCP; other versions are built as rust-reqwest-async builds them.
//!
//! Async, not blocking as rust-reqwest: a QUIC connection ends with a CONNECTION_CLOSE packet
//! that the runtime must still send after the client is dropped. The blocking client's private
//! runtime stops with the client, leaving the server's side open until its idle timeout; the
//! process's runtime here goes on and sends it.

use std::sync::Arc;

use labdriver::parallel::{AsyncDriver, Parallel};
use labdriver::{Error, Http, Job, Opt, Response, Versions};
use reqwest::{Client, Version, multipart::Form};

struct ReqwestHttp3;

impl AsyncDriver for ReqwestHttp3 {
    type Client = Client;
    const OPTIONS: &'static [Opt] = labdriver::REQWEST_OPTIONS;
    const HTTP3: bool = true;

    fn versions(&self) -> Versions {
        let mut versions = labdriver::reqwest_versions();
        versions.extend(labdriver::locked(&["h3", "h3-quinn", "quinn", "quinn-proto"]));
        versions
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        if job.http == Http::H3 {
            if job.options.tcp_nodelay.is_some() {
                return Some("option tcp_nodelay has no meaning over QUIC (UDP)".into());
            }
            // its HTTP/3 pool has an idle timeout only: pool_max_idle_per_host(0) does not reach it
            if !job.keep_alive {
                return Some(
                    "reqwest keeps every HTTP/3 connection for reuse: keep_alive off cannot be honoured".into(),
                );
            }
        }
        labdriver::reqwest_refusal(job)
    }

    fn open(&self, job: &Job) -> Result<Client, Error> {
        let builder = labdriver::reqwest_builder!(Client::builder(), job);
        Ok(if job.http == Http::H3 { builder.http3_prior_knowledge() } else { builder }.build()?)
    }

    /// One request of entry `r` (labdriver::reqwest_send_async: body file, memory or file sink).
    async fn request(client: Client, job: Arc<Job>, r: usize) -> Result<Response, Error> {
        let req = &job.requests[r];
        let mut builder = labdriver::reqwest_request!(client, Form, req);
        if job.http == Http::H3 {
            // reqwest takes QUIC only for a request that asks for HTTP/3; at its default (1.1)
            // the request would go over TCP
            builder = builder.version(Version::HTTP_3);
        }
        labdriver::reqwest_send_async!(builder, &job, req)
    }
}

fn main() {
    // ring is the process's crypto provider (as in the other Rust drivers): reqwest takes the
    // installed default for TCP and QUIC alike, not aws-lc-rs, its own default with this feature
    let _ = rustls::crypto::ring::default_provider().install_default();
    labdriver::main(&mut Parallel::new(ReqwestHttp3));
}
