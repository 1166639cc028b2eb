//! labdriver: the clientlab driver protocol (docs/driver-protocol.md) for Rust drivers.
//!
//! A sequential driver implements [`Driver`]: the job options it honours, `open` (build the
//! client from the job, no connection), `request` (one request) and `close`. A driver on tokio
//! implements [`parallel::AsyncDriver`] instead (build the client, one request as a future) and
//! runs as `parallel::Parallel`, up to `concurrency` requests in flight. [`main`] does the rest:
//! hello / job / ready / go / done / report, refusing jobs that need a capability the driver's
//! `driver.toml` does not claim or an option the driver does not honour.
//!
//! The real stdout is kept for protocol lines only: [`main`] moves it to a private descriptor
//! and points fd 1 at stderr, so a library's default output cannot corrupt the protocol.

mod job;
#[cfg(feature = "tokio")]
pub mod parallel;
mod reqwest;
pub use reqwest::{REQWEST_OPTIONS, reqwest_refusal, reqwest_versions};
mod report;

pub use job::{Http, Job, Opt, Options, Refusal, Request, manifest_capabilities, refusal};
pub use report::{CHUNK, Error, FileSink, Report, Response, error_message, http_label};

use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::sync::Arc;

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

    /// Library versions for the hello message.
    fn versions(&self) -> Versions;

    /// A reason this driver cannot do `job` exactly, beyond capabilities and options.
    fn refuse(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Build and configure the client. No connection may be opened here.
    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error>;

    /// Do one request of `job`; an error is a request that got no response.
    fn request(&mut self, _job: &Job, _req: &Request) -> Result<Response, Error> {
        Err("this driver runs its requests in run_all".into())
    }

    /// The timed phase: every request of the job. By default one after another, in order.
    fn run_all(&mut self, job: &Arc<Job>) -> Report {
        let mut report = Report::with_capacity(job.total());
        for r in job.work() {
            let outcome = self.request(job, &job.requests[r]);
            report.add(r, outcome);
        }
        report
    }

    /// Close the client and every connection it holds (after the report).
    fn close(&mut self);
}

/// The protocol message loop for one driver.
struct Loop<'a, D: Driver> {
    driver: &'a mut D,
    capabilities: Vec<String>,
    out: File,
    job: Option<Arc<Job>>,
}

impl<D: Driver> Loop<'_, D> {
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

    fn on_job(&mut self, data: &Value) {
        self.job = None;
        let job = match Job::parse(data) {
            Ok(job) => job,
            Err(Refusal::Error(message)) => return self.send(serde_json::json!({"type": "error", "message": message})),
            Err(Refusal::Unsupported(reason)) => {
                return self.send(serde_json::json!({"type": "unsupported", "reason": reason}));
            }
        };
        let reason = refusal(&job, &self.capabilities, D::OPTIONS).or_else(|| self.driver.refuse(&job));
        if let Some(reason) = reason {
            return self.send(serde_json::json!({"type": "unsupported", "reason": reason}));
        }
        let job = Arc::new(job);
        if let Err(err) = self.driver.open(&job) {
            let message = format!("building the client failed: {}", error_message(&*err));
            eprintln!("labdriver: {message}");
            self.driver.close();
            return self.send(serde_json::json!({"type": "error", "message": message}));
        }
        self.job = Some(job);
        self.send_line(r#"{"type":"ready"}"#);
    }

    fn on_go(&mut self) {
        let Some(job) = self.job.take() else {
            return self.send(serde_json::json!({"type": "error", "message": "go without a ready job"}));
        };
        let report = self.driver.run_all(&job);
        self.send_line(r#"{"type":"done"}"#); // before the report: serialising it is not timed
        let line = report.to_json(job.verify);
        self.send_line(&line);
        self.driver.close(); // no connection survives the job
    }

    fn run(&mut self) {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
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
                other => {
                    let text = format!("unknown message type {other:?}");
                    self.send(serde_json::json!({"type": "error", "message": text}));
                }
            }
        }
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

/// Run `driver` on stdin/stdout until end of input. `manifest` is the text of the driver's own
/// driver.toml (`include_str!("../driver.toml")`), the one place its capabilities are declared.
pub fn main<D: Driver>(driver: &mut D, manifest: &str) {
    let out = match protocol_output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("labdriver: stdout: {e}");
            std::process::exit(3);
        }
    };
    let capabilities = manifest_capabilities(manifest);
    Loop { driver, capabilities, out, job: None }.run();
}
