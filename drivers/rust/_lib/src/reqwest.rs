//! What the reqwest drivers share (rust-reqwest: `reqwest::blocking`; rust-reqwest-async and
//! rust-reqwest-http3: `reqwest` on tokio). The blocking and async builders have the same methods but no common
//! trait, so these are macros, expanded in the driver crates (which depend on reqwest; this
//! crate does not). Both return early with `?` on errors that convert into `labdriver::Error`.

/// A reqwest `ClientBuilder` (blocking or async) configured from a `&Job`: HTTP version forced
/// (HTTP/1.1 only, or HTTP/2 with prior knowledge: ALPN h2 only over TLS, h2c in cleartext),
/// the job's CA as the only trust anchor, cookies, gzip, redirect policy (only when the job
/// names one), timeout (only when the job names one), pooling.
#[macro_export]
macro_rules! reqwest_builder {
    ($builder:expr, $job:expr) => {{
        let job: &$crate::Job = $job;
        let mut builder = $builder.cookie_store(job.cookies);
        if !job.library_encoding() {
            // off: no Accept-Encoding at all; on: "gzip", decoded; left to the library, reqwest's
            // own (its gzip feature on: "gzip", decoded)
            builder = builder.gzip(job.accept_gzip);
        }
        if let Some(timeout) = job.timeout {
            builder = builder.timeout(timeout); // none named: reqwest's own (no total limit)
        }
        // the redirect policy is the client's: jobs mixing both are refused (reqwest_refusal);
        // none named (no URL redirects): reqwest's own default stays
        match job.follow_redirects() {
            Some(true) => builder = builder.redirect(reqwest::redirect::Policy::default()), // up to 10 hops
            Some(false) => builder = builder.redirect(reqwest::redirect::Policy::none()),
            None => {}
        }
        builder = match job.http {
            $crate::Http::H1 => builder.http1_only(),
            $crate::Http::H2 | $crate::Http::H2c => builder.http2_prior_knowledge(),
            // only rust-reqwest-http3 is given HTTP/3 jobs: it adds http3_prior_knowledge itself
            // (the method exists only with reqwest's unstable http3 feature)
            $crate::Http::H3 => builder,
        };
        if let Some(ca) = &job.tls_ca {
            builder = builder.tls_certs_only(reqwest::Certificate::from_pem_bundle(&std::fs::read(ca)?)?);
        }
        if !job.keep_alive {
            builder = builder.pool_max_idle_per_host(0); // no idle connection kept: one per request
        }
        if let Some(nodelay) = job.options.tcp_nodelay {
            builder = builder.tcp_nodelay(nodelay);
        }
        builder
    }};
}

/// A reqwest `RequestBuilder` for a `&Request`: method, URL, extra headers, and a form
/// (urlencoded, or multipart with the given `Form` type). A raw `body_file` body is the
/// driver's (blocking and async bodies differ).
#[macro_export]
macro_rules! reqwest_request {
    ($client:expr, $form:ty, $req:expr) => {{
        let req: &$crate::Request = $req;
        let mut builder = $client.request(reqwest::Method::from_bytes(req.method.as_bytes())?, req.url.as_str());
        for (name, value) in &req.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        match &req.form {
            Some(fields) if req.multipart => {
                let form = fields.iter().fold(<$form>::new(), |form, (k, v)| form.text(k.clone(), v.clone()));
                builder = builder.multipart(form);
            }
            Some(fields) => builder = builder.form(fields),
            None => {}
        }
        if req.body_file.is_some() {
            builder = builder.header(reqwest::header::CONTENT_TYPE, req.upload_type());
        }
        builder
    }};
}

/// Send an async reqwest `RequestBuilder` for `&Request` and take its answer (inside an async fn
/// returning `Result<Response, Error>`): a raw `body_file` body streamed from the file
/// (tokio::fs; its length is known, so no chunked encoding), then the body into memory
/// (`bytes()`), or chunk by chunk into the file (tokio::fs through a BufWriter).
#[macro_export]
macro_rules! reqwest_send_async {
    ($builder:expr, $job:expr, $req:expr) => {{
        let (job, req): (&$crate::Job, &$crate::Request) = ($job, $req);
        let mut builder = $builder;
        if let Some(path) = &req.body_file {
            builder = builder.header(reqwest::header::CONTENT_LENGTH, req.body_size()?);
            builder = builder.body(tokio::fs::File::open(path).await?);
        }
        let mut resp = builder.send().await?;
        let (status, version) = (resp.status().as_u16(), resp.version());
        if req.sink_path.is_some() {
            let mut sink = $crate::AsyncFileSink::create(req, job.verify).await?;
            while let Some(chunk) = resp.chunk().await? {
                sink.write(&chunk).await?;
            }
            sink.finish(status, version).await
        } else {
            Ok($crate::Response::memory(status, version, &resp.bytes().await?, job.verify))
        }
    }};
}

/// The job options both reqwest drivers honour.
pub const REQWEST_OPTIONS: &[crate::Opt] = &[
    crate::Opt::any("tcp_nodelay"),
    crate::Opt::never("max_host_connections", "reqwest has no per-host connection limit (only an idle-pool size)"),
    crate::Opt::only("expect_100", &["false"], "reqwest never sends Expect: 100-continue"),
    crate::LIBRARY_ENCODING,
];

/// Versions of what a reqwest driver runs: reqwest, the hyper stack under it, rustls (ring).
pub fn reqwest_versions() -> crate::Versions {
    let mut versions = crate::base_versions();
    versions.extend(crate::locked(&[
        "reqwest",
        "hyper",
        "hyper-util",
        "h2",
        "tokio",
        "rustls",
        "ring",
        "cookie_store",
    ]));
    versions
}

/// Why a reqwest driver cannot do `job`: its redirect policy belongs to the client.
pub fn reqwest_refusal(job: &crate::Job) -> Option<String> {
    job.mixes_redirects().then(|| {
        "reqwest sets its redirect policy per client, and this job mixes following and not following redirects".into()
    })
}
