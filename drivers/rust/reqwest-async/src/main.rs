//! clientlab driver rust-reqwest-async: one async `reqwest::Client` for the job on a tokio
//! multi-threaded runtime, up to `concurrency` requests in flight.

use std::sync::Arc;

use labdriver::parallel::{AsyncDriver, Parallel};
use labdriver::{AsyncFileSink, Error, Job, Opt, Response, Versions};
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

    /// One request of entry `r`: the body into memory (`bytes()`), or chunk by chunk into the file
    /// (tokio::fs through a BufWriter).
    async fn request(client: Client, job: Arc<Job>, r: usize) -> Result<Response, Error> {
        let req = &job.requests[r];
        let mut builder = labdriver::reqwest_request!(client, Form, req);
        if let Some(path) = &req.body_file {
            // streamed from the file (tokio::fs); the length is known, so no chunked encoding
            builder = builder.header(reqwest::header::CONTENT_LENGTH, req.body_size()?);
            builder = builder.body(tokio::fs::File::open(path).await?);
        }
        let mut resp = builder.send().await?;
        let (status, version) = (resp.status().as_u16(), resp.version());
        if req.sink_path.is_some() {
            let mut sink = AsyncFileSink::create(req, job.verify).await?;
            while let Some(chunk) = resp.chunk().await? {
                sink.write(&chunk).await?;
            }
            return sink.finish(status, version).await;
        }
        Ok(Response::memory(status, version, &resp.bytes().await?, job.verify))
    }
}

fn main() {
    // rustls without aws-lc-rs: ring is the process's crypto provider
    let _ = rustls::crypto::ring::default_provider().install_default();
    labdriver::main(&mut Parallel::new(ReqwestAsync));
}
