//! clientlab driver rust-hyper: hyper 1.x through hyper-util's legacy `Client` (its connection
//! pool) on a tokio multi-threaded runtime, up to `concurrency` requests in flight; TLS by
//! hyper-rustls (rustls with ring, the job's CA only). HTTP/2 is forced with `http2_only`:
//! ALPN h2 only over TLS, prior knowledge (h2c) in cleartext.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body_util::{BodyExt, Empty, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use labdriver::parallel::{AsyncDriver, Parallel};
use labdriver::{AsyncFileSink, CHUNK, Error, Http, Job, Opt, Request, Response, Versions};
use rustls::pki_types::{CertificateDer, pem::PemObject};

type Body = BoxBody<Bytes, std::io::Error>;
type HyperClient = Client<HttpsConnector<HttpConnector>, Body>;

const OPTIONS: &[Opt] = &[
    Opt::any("tcp_nodelay"),
    Opt::never("max_host_connections", "hyper-util's pool has no per-host connection limit"),
    Opt::only("expect_100", &["false"], "hyper never sends Expect: 100-continue"),
    labdriver::LIBRARY_ENCODING, // hyper sends no Accept-Encoding and decodes nothing, as every job does
];

struct Hyper;

/// A verifying rustls configuration (ring) that trusts only the job's CA.
fn tls_config(job: &Job) -> Result<rustls::ClientConfig, Error> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = &job.tls_ca {
        for cert in CertificateDer::pem_file_iter(ca)? {
            roots.add(cert?)?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The request body: a urlencoded form, the upload file streamed CHUNK bytes at a time, or none.
async fn body(req: &Request, builder: http::request::Builder) -> Result<http::Request<Body>, Error> {
    if req.form.is_some() {
        let form = Full::new(Bytes::from(req.urlencoded())).map_err(|never| match never {});
        return Ok(builder.header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(form.boxed())?);
    }
    if let Some(path) = &req.body_file {
        let file = tokio::fs::File::open(path).await?;
        let stream = tokio_util::io::ReaderStream::with_capacity(file, CHUNK).map_ok(Frame::data);
        let builder = builder.header(CONTENT_TYPE, req.upload_type()).header(CONTENT_LENGTH, req.body_size()?);
        return Ok(builder.body(StreamBody::new(stream).boxed())?);
    }
    Ok(builder.body(Empty::new().map_err(|never| match never {}).boxed())?)
}

/// One exchange: the request, then the whole response body (into memory, or frame by frame into
/// the file: tokio::fs through a BufWriter).
async fn exchange(client: &HyperClient, job: &Job, req: &Request) -> Result<Response, Error> {
    let mut builder = http::Request::builder().method(req.method.as_str()).uri(req.url.as_str());
    for (name, value) in &req.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let resp = client.request(body(req, builder).await?).await?;
    let (status, version) = (resp.status().as_u16(), resp.version());
    let mut incoming = resp.into_body();
    if req.sink_path.is_some() {
        let mut sink = AsyncFileSink::create(req, job.verify).await?;
        while let Some(frame) = incoming.frame().await {
            if let Ok(data) = frame?.into_data() {
                sink.write(&data).await?;
            }
        }
        return sink.finish(status, version).await;
    }
    let whole = incoming.collect().await?.to_bytes();
    Ok(Response::memory(status, version, &whole, job.verify))
}

impl AsyncDriver for Hyper {
    type Client = HyperClient;
    const OPTIONS: &'static [Opt] = OPTIONS;

    fn versions(&self) -> Versions {
        let mut versions = labdriver::base_versions();
        versions.extend(labdriver::locked(&["hyper", "hyper-util", "hyper-rustls", "h2", "tokio", "rustls", "ring"]));
        versions
    }

    fn open(&self, job: &Job) -> Result<HyperClient, Error> {
        let mut http = HttpConnector::new();
        http.enforce_http(false); // https URLs go through the TLS layer around it
        if let Some(nodelay) = job.options.tcp_nodelay {
            http.set_nodelay(nodelay);
        }
        let tls = HttpsConnectorBuilder::new().with_tls_config(tls_config(job)?).https_or_http();
        let connector = match job.http {
            Http::H1 => tls.enable_http1().wrap_connector(http), // no ALPN: HTTP/1.1
            Http::H2 | Http::H2c => tls.enable_http2().wrap_connector(http), // ALPN h2 only
            Http::H3 => unreachable!("labdriver refuses HTTP/3 jobs for a driver without HTTP3"),
        };
        let mut builder = Client::builder(TokioExecutor::new());
        builder.http2_only(job.http != Http::H1);
        if !job.keep_alive {
            builder.pool_max_idle_per_host(0); // the pool off: a new connection per request
        }
        Ok(builder.build(connector))
    }

    /// One request of entry `r`, given up after the job's timeout when it names one (hyper has
    /// none of its own).
    async fn request(client: HyperClient, job: Arc<Job>, r: usize) -> Result<Response, Error> {
        let Some(limit) = job.timeout else {
            return exchange(&client, &job, &job.requests[r]).await;
        };
        match tokio::time::timeout(limit, exchange(&client, &job, &job.requests[r])).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("timed out after {limit:?}").into()),
        }
    }
}

fn main() {
    labdriver::main(&mut Parallel::new(Hyper));
}
