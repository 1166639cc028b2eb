//! clientlab driver rust-reqwest-async: one async `reqwest::Client` for the job on a tokio
//! multi-threaded runtime, up to `concurrency` requests in flight.

use std::sync::Arc;

use labdriver::parallel::{AsyncDriver, Parallel};
use labdriver::{Error, Job, Opt, Response, Versions};
use reqwest::{Client, multipart::Form};

struct ReqwestAsync;

impl AsyncDriver for ReqwestAsync {
    type Client = Client;
    const OPTIONS: &'static [Opt] = labdriver::REQWEST_OPTIONS;

    fn versions(&self) -> Versions {
        labdriver::reqwest_versions()
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        labdriver::reqwest_refusal(job)
    }

    fn open(&self, job: &Job) -> Result<Client, Error> {
        Ok(labdriver::reqwest_builder!(Client::builder(), job).build()?)
    }

    /// One request of entry `r` (labdriver::reqwest_send_async: body file, memory or file sink).
    async fn request(client: Client, job: Arc<Job>, r: usize) -> Result<Response, Error> {
        let req = &job.requests[r];
        let builder = labdriver::reqwest_request!(client, Form, req);
        labdriver::reqwest_send_async!(builder, &job, req)
    }
}

fn main() {
    // rustls without aws-lc-rs: ring is the process's crypto provider
    let _ = rustls::crypto::ring::default_provider().install_default();
    labdriver::main(&mut Parallel::new(ReqwestAsync));
}
