//! clientlab driver rust-reqwest: one `reqwest::blocking::Client` for the job, requests one
//! after another (the blocking client drives its own tokio runtime on a background thread).

use std::sync::Arc;

use labdriver::{Driver, Error, FileSink, Job, Opt, Request, Response, Versions};
use reqwest::blocking::{Client, multipart::Form};

#[derive(Default)]
struct Reqwest {
    client: Option<Client>,
}

impl Driver for Reqwest {
    const OPTIONS: &'static [Opt] = labdriver::REQWEST_OPTIONS;

    fn versions(&self) -> Versions {
        labdriver::reqwest_versions()
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        labdriver::reqwest_refusal(job)
    }

    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error> {
        self.client = Some(labdriver::reqwest_builder!(Client::builder(), job).build()?);
        Ok(())
    }

    fn request(&mut self, job: &Job, req: &Request) -> Result<Response, Error> {
        let client = self.client.as_ref().ok_or("no client")?;
        let mut builder = labdriver::reqwest_request!(client, Form, req);
        if let Some(path) = &req.body_file {
            builder = builder.body(std::fs::File::open(path)?); // streamed, Content-Length from the file
        }
        let resp = builder.send()?;
        let (status, version) = (resp.status().as_u16(), resp.version());
        if req.sink_path.is_some() {
            return FileSink::create(req, job.verify)?.drain(resp, status, version);
        }
        Ok(Response::memory(status, version, &resp.bytes()?, job.verify))
    }

    fn close(&mut self) {
        self.client = None; // drops the pool and stops the client's runtime thread
    }
}

fn main() {
    // rustls without aws-lc-rs: ring is the process's crypto provider
    let _ = rustls::crypto::ring::default_provider().install_default();
    labdriver::main(&mut Reqwest::default(), include_str!("../driver.toml"));
}
