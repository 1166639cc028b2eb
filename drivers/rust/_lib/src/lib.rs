//! labdriver: the clientlab driver protocol (docs/driver-protocol.md) for Rust drivers.
//!
//! A driver for a blocking client implements [`parallel::BlockingDriver`] (the job options it
//! honours, `open`: build the client from the job, no connection; `request`: one request on the
//! shared client) and runs as [`parallel::Threads`]: one request after another, or
//! `concurrency` threads sharing the client. A driver on tokio implements
//! [`parallel::AsyncDriver`] (build the client, one request as a future) and runs as
//! [`parallel::Parallel`], up to `concurrency` requests in flight. Both are a [`Driver`];
//! [`main`] does the rest: hello / job / ready / go / done / report, refusing jobs with an
//! option the driver does not honour (or that its own `refuse` hook turns down), and the
//! calibration loop (`bare`: the job's requests through the same `run_all` on one client kept
//! from round to round, counted into a [`Tally`] instead of a [`Report`], timed by the driver's
//! own clock). Capabilities are the lab's to check (driver.toml), not this crate's.
//!
//! The real stdout is kept for protocol lines only: [`main`] moves it to a private descriptor
//! and points fd 1 at stderr, so a library's default output cannot corrupt the protocol.

mod job;
pub mod parallel;
mod reqwest;
pub use reqwest::{REQWEST_OPTIONS, reqwest_refusal, reqwest_versions};
mod report;
#[cfg(test)]
mod transcript;

pub use job::{Http, Job, LIBRARY_ENCODING, Opt, Options, Refusal, Request, refusal};
#[cfg(feature = "tokio")]
pub use report::AsyncFileSink;
pub use report::{CHUNK, Error, FileSink, Outcomes, Report, Response, Tally, error_message, http_label};

use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::time::Instant;

pub const PROTOCOL: u64 = 1;

include!(concat!(env!("OUT_DIR"), "/versions.rs"));

/// The version of crate `name` in the workspace's Cargo.lock, read when this crate was built
/// (several versions are joined with " / "); "?" when the lock does not have it.
pub fn lock_version(name: &str) -> String {
    let found: Vec<&str> = LOCKED.iter().filter(|(n, _)| *n == name).map(|(_, v)| *v).collect();
    if found.is_empty() { "?".into() } else { found.join(" / ") }
}

/// `(name, version)` pairs for the hello message.
pub type Versions = Vec<(&'static str, String)>;

/// Versions every Rust driver reports: the compiler that built it.
pub fn base_versions() -> Versions {
    vec![("rustc", RUSTC.to_string())]
}

/// `name` → its locked version, for each crate named.
pub fn locked(names: &[&'static str]) -> Versions {
    names.iter().map(|name| (*name, lock_version(name))).collect()
}

/// One client library behind the protocol.
pub trait Driver {
    /// The job options this driver knows; any other non-null option is refused.
    const OPTIONS: &'static [Opt];

    /// True when the driver forces HTTP/3 for an `http: "3"` job; the others refuse such a job
    /// before their own checks.
    const HTTP3: bool = false;

    /// Library versions for the hello message.
    fn versions(&self) -> Versions;

    /// A reason this driver cannot do `job` exactly, beyond the options it honours.
    fn refuse(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Build and configure the client. No connection may be opened here.
    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error>;

    /// Do one request of `job`; an error is a request that got no response.
    fn request(&mut self, _job: &Job, _req: &Request) -> Result<Response, Error> {
        Err("this driver runs its requests in run_all".into())
    }

    /// The timed phase (and a bare round): every request of the job, each one's outcome into
    /// `into`. By default one after another, in order.
    fn run_all<O: Outcomes>(&mut self, job: &Arc<Job>, into: &mut O) {
        for r in job.work() {
            let outcome = self.request(job, &job.requests[r]);
            into.add(r, outcome);
        }
    }

    /// Close the client and every connection it holds (after the report, or the last bare round).
    fn close(&mut self);
}

/// The protocol message loop for one driver, writing protocol lines to `out`.
struct Loop<'a, D: Driver, W: Write> {
    driver: &'a mut D,
    out: W,
    /// the job that is ready (its client built), waiting for go
    job: Option<Arc<Job>>,
    /// the calibration loop's client is built (by the first bare round) and kept for the next
    bare: bool,
}

impl<D: Driver, W: Write> Loop<'_, D, W> {
    fn send_line(&mut self, line: &str) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(e) = self.out.write_all(&bytes) {
            eprintln!("labdriver: cannot write to the lab: {e}");
            std::process::exit(3);
        }
    }

    fn send(&mut self, message: Value) {
        self.send_line(&message.to_string());
    }

    /// Answer a job that cannot be taken: `error` or `unsupported`.
    fn refuse(&mut self, why: Refusal) {
        match why {
            Refusal::Error(message) => self.send(serde_json::json!({"type": "error", "message": message})),
            Refusal::Unsupported(reason) => self.send(serde_json::json!({"type": "unsupported", "reason": reason})),
        }
    }

    /// Parse a job and refuse what the driver cannot do exactly (options, its own hook).
    fn accept(&self, data: &Value) -> Result<Arc<Job>, Refusal> {
        let job = Job::parse(data)?;
        if job.http == Http::H3 && !D::HTTP3 {
            return Err(Refusal::Unsupported("http \"3\": this driver does not speak HTTP/3".into()));
        }
        match refusal(&job, D::OPTIONS).or_else(|| self.driver.refuse(&job)) {
            Some(reason) => Err(Refusal::Unsupported(reason)),
            None => Ok(Arc::new(job)),
        }
    }

    /// Accept a job and build the client for it.
    fn open(&mut self, data: &Value) -> Result<Arc<Job>, Refusal> {
        let job = self.accept(data)?;
        if let Err(err) = self.driver.open(&job) {
            let message = format!("building the client failed: {}", error_message(&*err));
            eprintln!("labdriver: {message}");
            self.driver.close();
            return Err(Refusal::Error(message));
        }
        Ok(job)
    }

    fn on_job(&mut self, data: &Value) {
        self.job = None;
        self.end_bare();
        match self.open(data) {
            Ok(job) => {
                self.job = Some(job);
                self.send_line(r#"{"type":"ready"}"#);
            }
            Err(why) => self.refuse(why),
        }
    }

    fn on_go(&mut self) {
        let Some(job) = self.job.take() else {
            return self.send(serde_json::json!({"type": "error", "message": "go without a ready job"}));
        };
        let mut report = Report::with_capacity(job.total());
        self.driver.run_all(&job, &mut report);
        self.send_line(r#"{"type":"done"}"#); // before the report: serialising it is not timed
        let line = report.to_json(job.verify);
        self.send_line(&line);
        self.driver.close(); // no connection survives the job
    }

    /// One round of the calibration loop: the job's requests on the kept client (built by the
    /// first round, as a job message builds it), timed by the driver's own clock, nothing kept
    /// but counts.
    fn on_bare(&mut self, data: &Value) {
        if self.job.take().is_some() {
            self.driver.close(); // a ready job never run: its client is not the bare loop's
        }
        let job = if self.bare { self.accept(data) } else { self.open(data) };
        let job = match job {
            Ok(job) => job,
            Err(why) => return self.refuse(why),
        };
        self.bare = true;
        let mut tally = Tally::default();
        let start = Instant::now();
        self.driver.run_all(&job, &mut tally);
        let wall = start.elapsed();
        let line = tally.to_json(wall.as_secs_f64());
        self.send_line(&line);
    }

    /// Close the calibration loop's client, if one is open.
    fn end_bare(&mut self) {
        if std::mem::take(&mut self.bare) {
            self.driver.close();
        }
    }

    /// Answer messages until end of input, then close a bare client left open.
    fn run(&mut self, mut input: impl BufRead) {
        let mut line = String::new();
        loop {
            line.clear();
            match input.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("labdriver: reading stdin: {e}");
                    break;
                }
            }
            if line.trim().is_empty() {
                continue;
            }
            let message: Value = match serde_json::from_str(&line) {
                Ok(v @ Value::Object(_)) if v["type"].is_string() => v,
                _ => {
                    let shown: String = line.trim_end().chars().take(200).collect();
                    self.send(
                        serde_json::json!({"type": "error", "message": format!("not a protocol message: {shown:?}")}),
                    );
                    continue;
                }
            };
            match message["type"].as_str().unwrap_or_default() {
                "hello" => {
                    let versions: serde_json::Map<String, Value> =
                        self.driver.versions().into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect();
                    self.send(serde_json::json!({"type": "hello", "protocol": PROTOCOL, "versions": versions}));
                }
                "job" => self.on_job(&message["job"]),
                "go" => self.on_go(),
                "bare" => self.on_bare(&message["job"]),
                other => {
                    let text = format!("unknown message type {other:?}");
                    self.send(serde_json::json!({"type": "error", "message": text}));
                }
            }
        }
        self.end_bare();
    }
}

/// Keep the real stdout for protocol lines: a private duplicate of fd 1 (close-on-exec), and
/// fd 1 itself pointed at stderr.
fn protocol_output() -> std::io::Result<File> {
    // SAFETY: plain descriptor calls; the new descriptor is owned by the returned File only.
    unsafe {
        let fd = libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(File::from_raw_fd(fd))
    }
}

/// Run `driver` on stdin/stdout until end of input.
pub fn main<D: Driver>(driver: &mut D) {
    let out = match protocol_output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("labdriver: stdout: {e}");
            std::process::exit(3);
        }
    };
    Loop { driver, out, job: None, bare: false }.run(std::io::stdin().lock());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A driver that logs what the loop asks of it. Clients are numbered from 1 as they are
    /// built; a URL ending in /fail gets no response, one ending in /missing a 404.
    #[derive(Default)]
    struct Fake {
        log: Vec<String>,
        built: u32,
        client: Option<u32>,
        /// the client each request went out on
        served: Vec<u32>,
    }

    impl Driver for Fake {
        const OPTIONS: &'static [Opt] = &[];

        fn versions(&self) -> Versions {
            base_versions()
        }

        fn open(&mut self, _job: &Arc<Job>) -> Result<(), Error> {
            self.built += 1;
            self.client = Some(self.built);
            self.log.push(format!("open {}", self.built));
            Ok(())
        }

        fn request(&mut self, job: &Job, req: &Request) -> Result<Response, Error> {
            let client = self.client.ok_or("no client")?;
            self.served.push(client);
            match req.url.rsplit('/').next() {
                Some("fail") => Err(format!("refused {}", req.url).into()),
                Some("missing") => Ok(Response::memory(404, http::Version::HTTP_11, b"", job.verify)),
                _ => Ok(Response::memory(200, http::Version::HTTP_11, b"ok", job.verify)),
            }
        }

        fn close(&mut self) {
            if let Some(client) = self.client.take() {
                self.log.push(format!("close {client}"));
            }
        }
    }

    /// Run the loop on `messages` (then end of input); its answers.
    fn talk(driver: &mut Fake, messages: &[Value]) -> Vec<Value> {
        let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
        let mut lp = Loop { driver, out: Vec::new(), job: None, bare: false };
        lp.run(input.as_bytes());
        String::from_utf8(lp.out).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    fn job(port: u16, requests: Value) -> Value {
        let requests: Vec<Value> = requests
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                json!({"method": "GET", "url": format!("http://127.0.0.1:{port}/{}", r[0].as_str().unwrap()),
                "repeat": r[1]})
            })
            .collect();
        json!({"scenario": "s", "verify": false, "requests": requests})
    }

    fn bare(job: Value) -> Value {
        json!({"type": "bare", "job": job})
    }

    #[test]
    fn bare_rounds_reuse_the_first_rounds_client_until_end_of_input() {
        let mut fake = Fake::default();
        let answers =
            talk(&mut fake, &[bare(job(4001, json!([["a", 3]]))), bare(job(4002, json!([["a", 2], ["b", 2]])))]);
        assert_eq!(answers.iter().map(|a| a["requests"].as_u64().unwrap()).collect::<Vec<_>>(), vec![3, 4]);
        assert_eq!(fake.log, vec!["open 1", "close 1"]);
        assert_eq!(fake.served, vec![1; 7]);
    }

    #[test]
    fn a_bare_round_counts_responses_of_any_status_and_failures() {
        let mut fake = Fake::default();
        let answers = talk(&mut fake, &[bare(job(4001, json!([["ok", 3], ["missing", 2], ["fail", 2]])))]);
        let answer = &answers[0];
        assert_eq!((&answer["type"], &answer["requests"], &answer["errors"]), (&json!("bare"), &json!(5), &json!(2)));
        assert_eq!(answer["error"], "refused http://127.0.0.1:4001/fail");
        assert!(answer["wall_s"].as_f64().is_some_and(|s| s >= 0.0));
        assert_eq!(answer.as_object().unwrap().len(), 5); // nothing of a report
    }

    #[test]
    fn a_bare_round_without_failures_has_no_error() {
        let mut fake = Fake::default();
        let answers = talk(&mut fake, &[bare(job(4001, json!([["ok", 2]])))]);
        assert_eq!((&answers[0]["errors"], answers[0].get("error")), (&json!(0), None));
    }

    #[test]
    fn a_job_after_bare_rounds_closes_the_bare_client_first() {
        let mut fake = Fake::default();
        let messages = [
            bare(job(4001, json!([["a", 2]]))),
            bare(job(4001, json!([["a", 2]]))),
            json!({"type": "job", "job": job(4002, json!([["a", 1], ["fail", 1]]))}),
            json!({"type": "go"}),
        ];
        let answers = talk(&mut fake, &messages);
        let kinds: Vec<&str> = answers.iter().map(|a| a["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, vec!["bare", "bare", "ready", "done", "report"]);
        assert_eq!(fake.log, vec!["open 1", "close 1", "open 2", "close 2"]);
        assert_eq!(fake.served, vec![1, 1, 1, 1, 2, 2]);
        assert_eq!(answers[4]["responses"], json!([{"r": 0, "status": 200, "bytes": 2, "http": "1.1"}]));
        assert_eq!(answers[4]["errors"], json!([{"r": 1, "message": "refused http://127.0.0.1:4002/fail"}]));
    }

    #[test]
    fn the_first_bare_round_is_refused_as_a_job_would_be() {
        let mut fake = Fake::default();
        let mut nodelay = job(4001, json!([["a", 1]]));
        nodelay["options"] = json!({"tcp_nodelay": true});
        let messages = [
            bare(nodelay.clone()),
            json!({"type": "job", "job": nodelay}),
            bare(json!({"requests": 1})),
            bare(job(4001, json!([["a", 1]]))),
        ];
        let answers = talk(&mut fake, &messages);
        assert_eq!(answers[0], json!({"type": "unsupported", "reason": "option tcp_nodelay is not supported"}));
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[2]["type"], "error");
        assert_eq!((&answers[3]["type"], &answers[3]["requests"]), (&json!("bare"), &json!(1)));
        assert_eq!(fake.log, vec!["open 1", "close 1"]);
    }

    #[test]
    fn an_http3_job_is_refused_by_a_driver_without_http3() {
        let mut fake = Fake::default();
        let mut h3 = job(4001, json!([["a", 1]]));
        h3["http"] = json!("3");
        let answers = talk(&mut fake, &[json!({"type": "job", "job": h3.clone()}), bare(h3)]);
        let refused = json!({"type": "unsupported", "reason": "http \"3\": this driver does not speak HTTP/3"});
        assert_eq!(answers, vec![refused.clone(), refused]);
        assert!(fake.log.is_empty());
    }

    #[test]
    fn a_bare_round_drops_a_ready_job_and_its_client() {
        let mut fake = Fake::default();
        let messages = [
            json!({"type": "job", "job": job(4001, json!([["a", 1]]))}),
            bare(job(4001, json!([["a", 1]]))),
            json!({"type": "go"}),
        ];
        let answers = talk(&mut fake, &messages);
        assert_eq!(answers[2], json!({"type": "error", "message": "go without a ready job"}));
        assert_eq!(fake.log, vec!["open 1", "close 1", "open 2", "close 2"]);
    }

    #[test]
    fn a_job_reports_every_request_and_closes_its_client() {
        let mut fake = Fake::default();
        let messages =
            [json!({"type": "job", "job": job(4001, json!([["a", 2], ["missing", 1]]))}), json!({"type": "go"})];
        let answers = talk(&mut fake, &messages);
        assert_eq!(answers[0], json!({"type": "ready"}));
        assert_eq!(answers[1], json!({"type": "done"}));
        let statuses: Vec<_> =
            answers[2]["responses"].as_array().unwrap().iter().map(|r| r["status"].clone()).collect();
        assert_eq!(statuses, vec![json!(200), json!(200), json!(404)]);
        assert_eq!(fake.log, vec!["open 1", "close 1"]);
    }
}
