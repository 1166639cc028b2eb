//! clientlab driver rust-ureq: one `ureq::Agent` for the job (its connection pool, its cookie
//! jar), requests one after another; HTTP/1.1 only; rustls with ring, the job's CA only.

use std::sync::Arc;

use labdriver::{Driver, Error, FileSink, Job, Opt, Request, Response, Versions};
use ureq::tls::{PemItem, RootCerts, TlsConfig};
use ureq::typestate::{WithBody, WithoutBody};
use ureq::unversioned::multipart::Form;
use ureq::{Agent, RequestBuilder};

const OPTIONS: &[Opt] = &[
    Opt::any("tcp_nodelay"),
    Opt::never("max_host_connections", "ureq limits only idle connections, not open ones"),
    // ureq sends Expect: 100-continue only when the program adds the header, and then waits for
    // the 100 (timeout_await_100) before sending the body
    Opt::any("expect_100"),
];

#[derive(Default)]
struct Ureq {
    agent: Option<Agent>,
    cookies: bool,
    expect_100: bool,
}

/// Only the job's CA certificates (no bundled roots even when the job has no CA).
fn root_certs(job: &Job) -> Result<RootCerts, Error> {
    let mut certs = Vec::new();
    if let Some(ca) = &job.tls_ca {
        for item in ureq::tls::parse_pem(&std::fs::read(ca)?) {
            if let PemItem::Certificate(cert) = item? {
                certs.push(cert);
            }
        }
    }
    Ok(RootCerts::new_with_certs(&certs))
}

/// A request without a body, for the methods ureq has one for.
fn without_body(agent: &Agent, req: &Request) -> Result<RequestBuilder<WithoutBody>, Error> {
    let url = req.url.as_str();
    Ok(match req.method.as_str() {
        "GET" => agent.get(url),
        "HEAD" => agent.head(url),
        "DELETE" => agent.delete(url),
        "OPTIONS" => agent.options(url),
        "TRACE" => agent.trace(url),
        other => return Err(format!("ureq has no request builder for method {other}").into()),
    })
}

/// A request with a body (POST/PUT/PATCH, or another method forced to send one).
fn with_body(agent: &Agent, req: &Request) -> Result<RequestBuilder<WithBody>, Error> {
    let url = req.url.as_str();
    Ok(match req.method.as_str() {
        "POST" => agent.post(url),
        "PUT" => agent.put(url),
        "PATCH" => agent.patch(url),
        _ => without_body(agent, req)?.force_send_body(),
    })
}

/// The entry's extra headers and redirect setting (ureq configures redirects per request), and
/// `Expect: 100-continue` on a body when the job asks for it.
fn prepare<B>(builder: RequestBuilder<B>, req: &Request, expect_100: bool) -> RequestBuilder<B> {
    let mut builder = builder.config().max_redirects(if req.follow_redirects { 10 } else { 0 }).build();
    if expect_100 && req.has_body() {
        builder = builder.header("Expect", "100-continue");
    }
    req.headers.iter().fold(builder, |b, (name, value)| b.header(name.as_str(), value.as_str()))
}

impl Driver for Ureq {
    const OPTIONS: &'static [Opt] = OPTIONS;

    fn versions(&self) -> Versions {
        let mut versions = labdriver::base_versions();
        versions.extend(labdriver::locked(&["ureq", "ureq-proto", "rustls", "ring", "flate2", "cookie_store"]));
        versions
    }

    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error> {
        let mut config = Agent::config_builder()
            .http_status_as_error(false) // a 4xx/5xx is a response, not an error
            .timeout_global(Some(job.timeout))
            .accept_encoding(if job.accept_gzip { "gzip" } else { "" }) // "": no header at all
            .tls_config(TlsConfig::builder().root_certs(root_certs(job)?).build());
        if !job.keep_alive {
            config = config.max_idle_connections(0).max_idle_connections_per_host(0); // none kept
        }
        if let Some(nodelay) = job.options.tcp_nodelay {
            config = config.no_delay(nodelay);
        }
        self.agent = Some(config.build().new_agent());
        self.cookies = job.cookies;
        self.expect_100 = job.options.expect_100 == Some(true);
        Ok(())
    }

    fn request(&mut self, job: &Job, req: &Request) -> Result<Response, Error> {
        let agent = self.agent.as_ref().ok_or("no client")?;
        let mut resp = match (&req.form, &req.body_file) {
            (Some(fields), _) if req.multipart => {
                let form = fields.iter().fold(Form::new(), |form, (k, v)| form.text(k, v));
                prepare(with_body(agent, req)?, req, self.expect_100).send(form)?
            }
            (Some(fields), _) => {
                prepare(with_body(agent, req)?, req, self.expect_100).send_form(fields.iter().map(|(k, v)| (k, v)))?
            }
            // streamed from the file, Content-Length from its size
            (None, Some(path)) => prepare(with_body(agent, req)?, req, self.expect_100)
                .content_type(req.upload_type())
                .send(std::fs::File::open(path)?)?,
            (None, None) if matches!(req.method.as_str(), "POST" | "PUT" | "PATCH") => {
                prepare(with_body(agent, req)?, req, self.expect_100).send_empty()?
            }
            (None, None) => prepare(without_body(agent, req)?, req, false).call()?,
        };
        if !self.cookies {
            // the cookies feature gives every agent a jar: a job without cookies keeps none
            agent.cookie_jar_lock().clear();
        }
        let (status, version) = (resp.status().as_u16(), resp.version());
        // no size limit (ureq's read_to_vec stops at 10 MB by default)
        let body = resp.body_mut().with_config().limit(u64::MAX);
        if req.sink_path.is_some() {
            return FileSink::create(req, job.verify)?.drain(body.reader(), status, version);
        }
        Ok(Response::memory(status, version, &body.read_to_vec()?, job.verify))
    }

    fn close(&mut self) {
        self.agent = None; // drops the pool and its connections
    }
}

fn main() {
    labdriver::main(&mut Ureq::default(), include_str!("../driver.toml"));
}
