//! What requests got: responses (status, decoded length, HTTP version, digest when verifying),
//! errors, and the file sinks for `sink: "file"` bodies.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use crate::job::Request;

/// Read/write size for streamed bodies (the Python drivers' CHUNK).
pub const CHUNK: usize = 64 * 1024;

/// A failed request: any error, reported with its chain of causes.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What one request got: final status, decoded body length, HTTP version, digest if verify.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub bytes: u64,
    pub http: &'static str,
    pub sha256: Option<[u8; 32]>,
}

impl Response {
    /// A response whose whole (decoded) body is in memory; hashed only when verifying.
    pub fn memory(status: u16, version: http::Version, body: &[u8], verify: bool) -> Response {
        Response {
            status,
            bytes: body.len() as u64,
            http: http_label(version),
            sha256: verify.then(|| Sha256::digest(body).into()),
        }
    }
}

/// "1.0", "1.1" or "2", as the report wants the HTTP version.
pub fn http_label(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_11 => "1.1",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "?",
    }
}

/// The request's `sink_path`, for a `sink: "file"` body.
fn sink_path(req: &Request) -> io::Result<&str> {
    req.sink_path.as_deref().ok_or_else(|| io::Error::other("the request has no sink_path"))
}

/// What a file sink wrote: its size and, when verifying, its digest.
fn written(status: u16, version: http::Version, size: u64, digest: Option<Sha256>) -> Response {
    Response { status, bytes: size, http: http_label(version), sha256: digest.map(|d| d.finalize().into()) }
}

/// A `sink: "file"` body from a blocking client's reader, copied into a `BufWriter` over the
/// file (std's `io::copy` reads straight into its buffer: one write per CHUNK bytes), counted,
/// and hashed when verifying.
pub struct FileSink {
    out: BufWriter<File>,
    digest: Option<Sha256>,
}

impl FileSink {
    /// Create (truncate) the request's `sink_path`.
    pub fn create(req: &Request, verify: bool) -> io::Result<FileSink> {
        let out = BufWriter::with_capacity(CHUNK, File::create(sink_path(req)?)?);
        Ok(FileSink { out, digest: verify.then(Sha256::new) })
    }

    /// Copy a whole body from a blocking reader into the file, then describe what was written.
    pub fn drain(mut self, mut body: impl Read, status: u16, version: http::Version) -> Result<Response, Error> {
        let size = match &mut self.digest {
            None => io::copy(&mut body, &mut self.out)?,
            Some(digest) => io::copy(&mut body, &mut Hashing { out: &mut self.out, digest })?,
        };
        self.out.into_inner().map_err(|e| e.into_error())?; // the last buffered bytes, then closed
        Ok(written(status, version, size, self.digest))
    }
}

/// A writer that hashes what it passes on (verification only).
struct Hashing<'a, W: Write> {
    out: &'a mut W,
    digest: &'a mut Sha256,
}

impl<W: Write> Write for Hashing<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.digest.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A `sink: "file"` body from an async client's chunks, written through tokio's `BufWriter`
/// over a `tokio::fs::File`: the file hands every write to the blocking pool, so the buffer makes
/// that one hand-off per CHUNK bytes rather than one per chunk. Counted, hashed when verifying.
#[cfg(feature = "tokio")]
pub struct AsyncFileSink {
    out: tokio::io::BufWriter<tokio::fs::File>,
    size: u64,
    digest: Option<Sha256>,
}

#[cfg(feature = "tokio")]
impl AsyncFileSink {
    /// Create (truncate) the request's `sink_path`.
    pub async fn create(req: &Request, verify: bool) -> io::Result<AsyncFileSink> {
        let file = tokio::fs::File::create(sink_path(req)?).await?;
        Ok(AsyncFileSink {
            out: tokio::io::BufWriter::with_capacity(CHUNK, file),
            size: 0,
            digest: verify.then(Sha256::new),
        })
    }

    /// Append one chunk.
    pub async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.out.write_all(chunk).await?;
        self.size += chunk.len() as u64;
        if let Some(digest) = &mut self.digest {
            digest.update(chunk);
        }
        Ok(())
    }

    /// Write out what is buffered, close the file, and describe what was written.
    pub async fn finish(mut self, status: u16, version: http::Version) -> Result<Response, Error> {
        use tokio::io::AsyncWriteExt;
        self.out.flush().await?; // waits for the file's last write
        Ok(written(status, version, self.size, self.digest))
    }
}

/// Where a run of requests records each one's outcome: the [`Report`] of a timed trial, or the
/// [`Tally`] of a bare round. Both are filled by the same loop (`Driver::run_all`), so a bare
/// round times exactly the code a trial runs; the loop is generic over it, so a trial's loop is
/// compiled for `Report` alone and pays for no dynamic dispatch.
pub trait Outcomes: Send + 'static {
    /// An empty record with room for about `room` outcomes (a parallel worker's own share).
    fn with_room(room: usize) -> Self;

    /// Record the outcome of one request of entry `r`.
    fn add(&mut self, r: usize, outcome: Result<Response, Error>);

    /// Take in another record's outcomes (a parallel worker's), after this one's.
    fn merge(&mut self, other: Self);
}

/// Collects responses and errors, and writes them as the report message.
#[derive(Debug, Default)]
pub struct Report {
    pub responses: Vec<(usize, Response)>,
    pub errors: Vec<(usize, String)>,
}

impl Outcomes for Report {
    fn with_room(room: usize) -> Report {
        Report::with_capacity(room)
    }

    fn add(&mut self, r: usize, outcome: Result<Response, Error>) {
        match outcome {
            Ok(resp) => self.responses.push((r, resp)),
            Err(err) => self.errors.push((r, error_message(&*err))),
        }
    }

    fn merge(&mut self, other: Report) {
        self.responses.extend(other.responses);
        self.errors.extend(other.errors);
    }
}

impl Report {
    /// Room for `total` responses, so the timed phase does not pay for the lab's bookkeeping.
    pub fn with_capacity(total: usize) -> Report {
        Report { responses: Vec::with_capacity(total.min(1 << 20)), errors: Vec::new() }
    }

    /// The report message, one JSON line without the newline.
    pub fn to_json(&self, verify: bool) -> String {
        let mut out = String::with_capacity(64 + self.responses.len() * (if verify { 120 } else { 50 }));
        out.push_str(r#"{"type":"report","responses":["#);
        for (i, (r, resp)) in self.responses.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let _ =
                write!(out, r#"{sep}{{"r":{r},"status":{},"bytes":{},"http":"{}""#, resp.status, resp.bytes, resp.http);
            if let (true, Some(sha)) = (verify, &resp.sha256) {
                out.push_str(r#","sha256":""#);
                for byte in sha {
                    let _ = write!(out, "{byte:02x}");
                }
                out.push('"');
            }
            out.push('}');
        }
        out.push_str(r#"],"errors":["#);
        for (i, (r, message)) in self.errors.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let _ = write!(out, r#"{sep}{{"r":{r},"message":{}}}"#, serde_json::Value::from(message.as_str()));
        }
        out.push_str("]}");
        out
    }
}

/// Counts responses (whatever their status) and failures and keeps nothing else: a bare
/// round's stand-in for a [`Report`], so that the calibration loop pays for no report a plain
/// program would not build.
#[derive(Debug, Default)]
pub struct Tally {
    pub responses: u64,
    pub errors: u64,
    /// the first failure's message
    pub first_error: Option<String>,
}

impl Outcomes for Tally {
    fn with_room(_room: usize) -> Tally {
        Tally::default()
    }

    fn add(&mut self, _r: usize, outcome: Result<Response, Error>) {
        match outcome {
            Ok(_) => self.responses += 1,
            Err(err) => {
                self.errors += 1;
                self.first_error.get_or_insert_with(|| error_message(&*err));
            }
        }
    }

    fn merge(&mut self, other: Tally) {
        self.responses += other.responses;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

impl Tally {
    /// The bare answer for a round that took `wall_s` seconds, one JSON line without the newline.
    pub fn to_json(&self, wall_s: f64) -> String {
        let mut out = format!(
            r#"{{"type":"bare","wall_s":{},"requests":{},"errors":{}"#,
            serde_json::Value::from(wall_s),
            self.responses,
            self.errors
        );
        if let Some(message) = &self.first_error {
            let _ = write!(out, r#","error":{}"#, serde_json::Value::from(message.as_str()));
        }
        out.push('}');
        out
    }
}

/// An error and its causes, "outer: inner: root", each cause once, at most 500 characters.
pub fn error_message(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    if message.is_empty() {
        message = format!("{err:?}");
    }
    match message.char_indices().nth(500) {
        Some((cut, _)) => message[..cut].to_string(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_report_with_digests_only_when_verifying() {
        let mut report = Report::default();
        report.add(0, Ok(Response::memory(200, http::Version::HTTP_2, b"abc", true)));
        report.add(1, Err(Box::new(io::Error::other("refused \"x\""))));
        let sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(
            report.to_json(true),
            format!(
                r#"{{"type":"report","responses":[{{"r":0,"status":200,"bytes":3,"http":"2","sha256":"{sha}"}}],"errors":[{{"r":1,"message":"refused \"x\""}}]}}"#
            )
        );
        assert!(!report.to_json(false).contains("sha256"));
        serde_json::from_str::<serde_json::Value>(&report.to_json(true)).unwrap();
    }

    #[test]
    fn a_tally_counts_every_response_and_failure_and_keeps_the_first_message() {
        let (ok, missing) = (Response::memory(200, http::Version::HTTP_11, b"a", false), 404);
        let mut tally = Tally::with_room(10);
        tally.add(0, Ok(ok.clone()));
        tally.add(1, Ok(Response { status: missing, ..ok.clone() }));
        tally.add(2, Err("refused \"first\"".into()));
        let mut worker = Tally::default();
        worker.add(0, Ok(ok));
        worker.add(2, Err("refused second".into()));
        tally.merge(worker);
        assert_eq!((tally.responses, tally.errors), (3, 2));
        let answer: serde_json::Value = serde_json::from_str(&tally.to_json(0.25)).unwrap();
        assert_eq!(
            answer,
            serde_json::json!({"type": "bare", "wall_s": 0.25, "requests": 3, "errors": 2, "error": "refused \"first\""})
        );
        assert!(!Tally::default().to_json(1.0).contains("error\":"));
    }

    #[test]
    fn a_report_takes_in_a_workers_outcomes_after_its_own() {
        let resp = Response::memory(200, http::Version::HTTP_11, b"a", false);
        let mut report = Report::with_capacity(3);
        report.add(2, Ok(resp.clone()));
        let mut worker = Report::with_room(2);
        worker.add(0, Ok(resp));
        worker.add(1, Err("reset".into()));
        report.merge(worker);
        assert_eq!(report.responses.iter().map(|(r, _)| *r).collect::<Vec<_>>(), vec![2, 0]);
        assert_eq!(report.errors, vec![(1, "reset".to_string())]);
    }

    #[test]
    fn file_sink_counts_and_hashes_what_it_writes() {
        let path = std::env::temp_dir().join(format!("labdriver-sink-{}", std::process::id()));
        let req = crate::Job::parse(&serde_json::json!({"requests": [{"method": "GET", "url": "u", "sink": "file",
            "sink_path": path.to_str().unwrap()}]}))
        .unwrap()
        .requests
        .remove(0);
        let resp = FileSink::create(&req, true).unwrap().drain(&b"abc"[..], 200, http::Version::HTTP_11).unwrap();
        assert_eq!((resp.bytes, resp.http), (3, "1.1"));
        assert_eq!(resp.sha256, Response::memory(200, http::Version::HTTP_11, b"abc", true).sha256);
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        // larger than the buffer, not verifying: counted, no digest
        let body: Vec<u8> = (0..3 * CHUNK + 5).map(|i| i as u8).collect();
        let resp = FileSink::create(&req, false).unwrap().drain(&body[..], 200, http::Version::HTTP_11).unwrap();
        assert_eq!((resp.bytes, resp.sha256), (body.len() as u64, None));
        assert_eq!(std::fs::read(&path).unwrap(), body);
        std::fs::remove_file(path).unwrap();
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn async_file_sink_counts_and_hashes_what_it_writes() {
        let path = std::env::temp_dir().join(format!("labdriver-async-sink-{}", std::process::id()));
        let req = crate::Job::parse(&serde_json::json!({"requests": [{"method": "GET", "url": "u", "sink": "file",
            "sink_path": path.to_str().unwrap()}]}))
        .unwrap()
        .requests
        .remove(0);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let body: Vec<u8> = (0..3 * CHUNK + 5).map(|i| i as u8).collect();
        let resp = rt
            .block_on(async {
                let mut sink = AsyncFileSink::create(&req, true).await?;
                for chunk in body.chunks(1000) {
                    sink.write(chunk).await?;
                }
                sink.finish(200, http::Version::HTTP_2).await
            })
            .unwrap();
        assert_eq!((resp.bytes, resp.http), (body.len() as u64, "2"));
        assert_eq!(resp.sha256, Response::memory(200, http::Version::HTTP_2, &body, true).sha256);
        assert_eq!(std::fs::read(&path).unwrap(), body);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn error_messages_name_each_cause_once() {
        #[derive(Debug)]
        struct Outer(io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "request failed")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(error_message(&Outer(io::Error::other("connection refused"))), "request failed: connection refused");
        assert_eq!(error_message(&io::Error::other("x".repeat(600))).len(), 500);
    }
}
