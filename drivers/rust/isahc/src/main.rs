//! clientlab driver rust-isahc: one `isahc::HttpClient` for the job (libcurl underneath: the
//! system's libcurl, driven by isahc's agent thread through curl_multi_socket_action), requests
//! through the blocking `send`: one after another, or from `concurrency` threads sharing the
//! client (isahc's own parallel example: threads, one client).

use isahc::config::{Configurable, RedirectPolicy, VersionNegotiation};
use isahc::tls::{TlsConfig, TrustStore};
use isahc::{Body, HttpClient, ReadResponseExt};
use labdriver::parallel::{BlockingDriver, Threads};
use labdriver::{Error, FileSink, Http, Job, Opt, Request, Response, Versions};

const OPTIONS: &[Opt] = &[
    Opt::only("tcp_nodelay", &["true"], "isahc can only turn TCP_NODELAY on (tcp_nodelay())"),
    Opt::any("max_host_connections"),
    Opt::any("expect_100"),
    Opt::only("multi_api", &["\"multi_socket\""], "isahc's agent drives libcurl with curl_multi_socket_action"),
    Opt::never("share", "isahc has no libcurl share handle (one multi handle's caches serve the client)"),
    // isahc's own: automatic decompression, libcurl asked for every coding it decodes
    labdriver::LIBRARY_ENCODING,
];

struct Isahc;

/// The job's client, shared by the threads, and what each request needs to know of the job.
struct Client {
    client: HttpClient,
    expect_100: Option<bool>,
    /// the job's entries differ on redirects: each entry that names a setting sets it itself
    redirects_per_request: bool,
}

/// isahc's redirect policy for following (up to 10 hops) or not (the 3xx is the response).
fn redirect_policy(follow: bool) -> RedirectPolicy {
    if follow { RedirectPolicy::Limit(10) } else { RedirectPolicy::None }
}

/// libcurl's own version string, e.g. "7.88.1".
fn libcurl() -> String {
    curl::Version::get().version().to_string()
}

impl BlockingDriver for Isahc {
    type Client = Client;
    const OPTIONS: &'static [Opt] = OPTIONS;

    fn versions(&self) -> Versions {
        // isahc::version() is "isahc/2.0.2 (features:...) libcurl/7.88.1 OpenSSL/3.0.x zlib/..."
        let isahc = isahc::version().split_whitespace().next().and_then(|s| s.strip_prefix("isahc/")).unwrap_or("?");
        let curl = curl::Version::get();
        let mut versions = labdriver::base_versions();
        versions.push(("isahc", isahc.to_string()));
        versions.extend(labdriver::locked(&["curl"])); // the binding crate (its bundled curl is not built)
        versions.push(("libcurl", libcurl()));
        for (name, version) in
            [("ssl", curl.ssl_version()), ("nghttp2", curl.nghttp2_version()), ("zlib", curl.libz_version())]
        {
            if let Some(version) = version {
                versions.push((name, version.to_string()));
            }
        }
        versions
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        let curl = curl::Version::get();
        if job.http != Http::H1 && !curl.feature_http2() {
            return Some(format!("this libcurl ({}) is built without HTTP/2", libcurl()));
        }
        // libcurl < 8.0.0 fails a prior-knowledge request that reuses an h2c connection
        // (curl#10634); isahc asks for prior knowledge on every request
        if job.http == Http::H2c && job.keep_alive && curl.version_num() < 0x080000 {
            return Some(format!(
                "libcurl {} fails prior-knowledge requests on a reused h2c connection (curl#10634, fixed in 8.0.0)",
                libcurl()
            ));
        }
        None
    }

    fn open(&self, job: &Job) -> Result<Client, Error> {
        let mut builder = HttpClient::builder()
            .version_negotiation(match job.http {
                Http::H1 => VersionNegotiation::http11(),
                Http::H2 | Http::H2c => VersionNegotiation::http2(), // prior knowledge, no fallback
                Http::H3 => unreachable!("labdriver refuses HTTP/3 jobs for a driver without HTTP3"),
            });
        if !job.library_encoding() {
            builder = builder.automatic_decompression(job.accept_gzip);
        }
        if let Some(timeout) = job.timeout {
            builder = builder.timeout(timeout);
        }
        if job.accept_gzip {
            builder = builder.default_header("Accept-Encoding", "gzip"); // exactly gzip, not curl's whole list
        }
        if job.cookies {
            builder = builder.cookies();
        }
        if let Some(ca) = &job.tls_ca {
            builder = builder.tls_config(TlsConfig::builder().trust_store(TrustStore::from_file(ca)).build());
        }
        if !job.keep_alive {
            builder = builder.connection_cache_size(0); // FORBID_REUSE: closed after each transfer
        }
        if job.options.tcp_nodelay == Some(true) {
            builder = builder.tcp_nodelay();
        }
        if let Some(max) = job.options.max_host_connections {
            builder = builder.max_connections_per_host(max as usize);
        }
        if let Some(expect) = job.options.expect_100 {
            builder = builder.expect_continue(expect); // false: "Expect:" removes libcurl's own
        }
        // the client's redirect policy when the job's entries agree; none named: isahc's own
        if let Some(follow) = job.follow_redirects() {
            builder = builder.redirect_policy(redirect_policy(follow));
        }
        Ok(Client {
            client: builder.build()?,
            expect_100: job.options.expect_100,
            redirects_per_request: job.mixes_redirects(),
        })
    }

    fn request(client: &Client, job: &Job, req: &Request) -> Result<Response, Error> {
        let mut builder = isahc::Request::builder().method(req.method.as_str()).uri(req.url.as_str());
        if let (true, Some(follow)) = (client.redirects_per_request, req.follow_redirects) {
            builder = builder.redirect_policy(redirect_policy(follow));
        }
        for (name, value) in &req.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if req.has_body() && client.expect_100 == Some(true) {
            builder = builder.header("Expect", "100-continue"); // libcurl waits for the 100 itself
        }
        let body = if req.form.is_some() {
            // isahc has no form API: the body as a program builds it, with form_urlencoded
            builder = builder.header("Content-Type", "application/x-www-form-urlencoded");
            Body::from(req.urlencoded())
        } else if let Some(path) = &req.body_file {
            builder = builder.header("Content-Type", req.upload_type());
            Body::from_reader_sized(std::fs::File::open(path)?, req.body_size()?) // streamed
        } else {
            Body::empty()
        };
        let mut resp = client.client.send(builder.body(body)?)?;
        let (status, version) = (resp.status().as_u16(), resp.version());
        if req.sink_path.is_some() {
            return FileSink::create(req, job.verify)?.drain(resp.body_mut(), status, version);
        }
        Ok(Response::memory(status, version, &resp.bytes()?, job.verify))
    }
}

fn main() {
    // closing the job's client stops isahc's agent thread; the multi handle closes its connections
    labdriver::main(&mut Threads::new(Isahc));
}
