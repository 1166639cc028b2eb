//! clientlab driver rust-ureq: one `ureq::Agent` for the job (its connection pool), requests one
//! after another or from `concurrency` threads sharing the agent; HTTP/1.1 only; rustls with
//! ring, the job's CA only. Built without ureq's `cookies` feature: with it, every agent keeps
//! a cookie jar (no setting turns it off), so a program that keeps no cookies leaves it out.

use labdriver::parallel::{BlockingDriver, Threads};
use labdriver::{Error, FileSink, Job, Opt, Request, Response, Versions};
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
    labdriver::LIBRARY_ENCODING, // ureq's own Accept-Encoding (its gzip feature: "gzip", decoded)
];

struct Ureq;

/// The job's agent, shared by the threads, and what each request needs to know of the job.
struct Client {
    agent: Agent,
    expect_100: bool,
    /// the job's entries differ on redirects: each entry that names a setting sets it itself
    redirects_per_request: bool,
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

/// ureq's max_redirects for following (its default, 10 hops) or not (0: the 3xx is the response).
fn max_redirects(follow: bool) -> u32 {
    if follow { 10 } else { 0 }
}

/// The entry's extra headers, its redirect setting when the agent's does not fit every entry,
/// and `Expect: 100-continue` on a body when the job asks for it.
fn prepare<B>(builder: RequestBuilder<B>, client: &Client, req: &Request) -> RequestBuilder<B> {
    let mut builder = match req.follow_redirects {
        Some(follow) if client.redirects_per_request => builder.config().max_redirects(max_redirects(follow)).build(),
        _ => builder,
    };
    if client.expect_100 && req.has_body() {
        builder = builder.header("Expect", "100-continue");
    }
    req.headers.iter().fold(builder, |b, (name, value)| b.header(name.as_str(), value.as_str()))
}

impl BlockingDriver for Ureq {
    type Client = Client;
    const OPTIONS: &'static [Opt] = OPTIONS;

    fn versions(&self) -> Versions {
        let mut versions = labdriver::base_versions();
        versions.extend(labdriver::locked(&["ureq", "ureq-proto", "rustls", "ring", "flate2"]));
        versions
    }

    fn open(&self, job: &Job) -> Result<Client, Error> {
        let mut config = Agent::config_builder()
            .http_status_as_error(false) // a 4xx/5xx is a response, not an error
            // only a limit the job names: ureq's timeout_global runs a thread per request
            .timeout_global(job.timeout)
            .tls_config(TlsConfig::builder().root_certs(root_certs(job)?).build());
        if !job.library_encoding() {
            config = config.accept_encoding(if job.accept_gzip { "gzip" } else { "" }); // "": no header at all
        }
        if !job.keep_alive {
            config = config.max_idle_connections(0).max_idle_connections_per_host(0); // none kept
        }
        if let Some(nodelay) = job.options.tcp_nodelay {
            config = config.no_delay(nodelay);
        }
        // the agent's redirect setting when the job's entries agree; none named: ureq's own
        if let Some(follow) = job.follow_redirects() {
            config = config.max_redirects(max_redirects(follow));
        }
        Ok(Client {
            agent: config.build().new_agent(),
            expect_100: job.options.expect_100 == Some(true),
            redirects_per_request: job.mixes_redirects(),
        })
    }

    fn request(client: &Client, job: &Job, req: &Request) -> Result<Response, Error> {
        let agent = &client.agent;
        let mut resp = match (&req.form, &req.body_file) {
            (Some(fields), _) if req.multipart => {
                let form = fields.iter().fold(Form::new(), |form, (k, v)| form.text(k, v));
                prepare(with_body(agent, req)?, client, req).send(form)?
            }
            (Some(fields), _) => {
                prepare(with_body(agent, req)?, client, req).send_form(fields.iter().map(|(k, v)| (k, v)))?
            }
            // streamed from the file, Content-Length from its size
            (None, Some(path)) => prepare(with_body(agent, req)?, client, req)
                .content_type(req.upload_type())
                .send(std::fs::File::open(path)?)?,
            (None, None) if matches!(req.method.as_str(), "POST" | "PUT" | "PATCH") => {
                prepare(with_body(agent, req)?, client, req).send_empty()?
            }
            (None, None) => prepare(without_body(agent, req)?, client, req).call()?,
        };
        let (status, version) = (resp.status().as_u16(), resp.version());
        // no size limit (ureq's read_to_vec stops at 10 MB by default)
        let body = resp.body_mut().with_config().limit(u64::MAX);
        if req.sink_path.is_some() {
            return FileSink::create(req, job.verify)?.drain(body.reader(), status, version);
        }
        Ok(Response::memory(status, version, &body.read_to_vec()?, job.verify))
    }
}

fn main() {
    // closing the job's client drops the agent: its pool and connections
    labdriver::main(&mut Threads::new(Ureq));
}
