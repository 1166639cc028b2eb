//! clientlab driver rust-reqwest: one `reqwest::blocking::Client` for the job (the blocking
//! client drives its own tokio runtime on a background thread), requests one after another, or
//! from `concurrency` threads sharing the client.

use labdriver::parallel::{BlockingDriver, Threads};
use labdriver::{Error, FileSink, Job, Opt, Request, Response, Versions};
use reqwest::blocking::{Client, multipart::Form};

struct Reqwest;

impl BlockingDriver for Reqwest {
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

    fn request(client: &Client, job: &Job, req: &Request) -> Result<Response, Error> {
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
}

fn main() {
    // rustls without aws-lc-rs: ring is the process's crypto provider
    let _ = rustls::crypto::ring::default_provider().install_default();
    // closing the job's client drops the pool and stops the client's runtime thread
    labdriver::main(&mut Threads::new(Reqwest));
}
