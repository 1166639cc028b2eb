//! A job (docs/driver-protocol.md §3) as typed fields, and what a driver may refuse about it.

use serde_json::{Map, Value};
use std::time::Duration;

/// The HTTP version a job asks for; never fall back to another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    /// HTTP/1.1
    H1,
    /// HTTP/2 over TLS (ALPN h2)
    H2,
    /// HTTP/2 over cleartext with prior knowledge
    H2c,
    /// HTTP/3 over QUIC (ALPN h3; the URLs name the server's UDP port); only drivers that
    /// declare `Driver::HTTP3` are given such a job, the others answer it unsupported
    H3,
}

/// One entry of `job.requests`, done `repeat` times; `r` is its index.
#[derive(Clone, Debug)]
pub struct Request {
    pub r: usize,
    pub method: String,
    pub url: String,
    pub repeat: u64,
    /// extra request headers, in the job's (sorted) order
    pub headers: Vec<(String, String)>,
    /// form fields, when the request posts a form
    pub form: Option<Vec<(String, String)>>,
    /// the form goes as multipart/form-data (else urlencoded)
    pub multipart: bool,
    /// a raw body read from this file
    pub body_file: Option<String>,
    pub content_type: Option<String>,
    /// `Some(true)`: follow 3xx; `Some(false)`: report the 3xx; `None`: the URL does not
    /// redirect, so the client's redirect setting stays as the library ships it
    pub follow_redirects: Option<bool>,
    /// `Some(path)` when the body is streamed to a file (`sink: "file"`)
    pub sink_path: Option<String>,
}

impl Request {
    /// True when the request carries a body (form or file).
    pub fn has_body(&self) -> bool {
        self.form.is_some() || self.body_file.is_some()
    }

    /// The form as application/x-www-form-urlencoded text ("" when there is no form).
    pub fn urlencoded(&self) -> String {
        let mut out = form_urlencoded::Serializer::new(String::new());
        for (name, value) in self.form.iter().flatten() {
            out.append_pair(name, value);
        }
        out.finish()
    }

    /// Content-Type of a raw `body_file` body.
    pub fn upload_type(&self) -> &str {
        self.content_type.as_deref().unwrap_or("application/octet-stream")
    }

    /// Size of `body_file`, for an explicit Content-Length.
    pub fn body_size(&self) -> std::io::Result<u64> {
        match &self.body_file {
            Some(path) => Ok(std::fs::metadata(path)?.len()),
            None => Ok(0),
        }
    }
}

/// `job.options`: `None` is null (the client's own default).
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub tcp_nodelay: Option<bool>,
    pub max_host_connections: Option<u64>,
    pub expect_100: Option<bool>,
    pub share: Option<Vec<String>>,
    pub multi_api: Option<String>,
    /// `Some("library")`: the job leaves Accept-Encoding and decoding to the library as it ships
    pub accept_encoding: Option<String>,
    /// every non-null option as given, for the refusal check
    pub(crate) given: Vec<(String, Value)>,
}

#[derive(Clone, Debug)]
pub struct Job {
    pub scenario: String,
    pub verify: bool,
    pub http: Http,
    pub tls_ca: Option<String>,
    pub concurrency: usize,
    pub keep_alive: bool,
    pub cookies: bool,
    pub accept_gzip: bool,
    /// None: the job names no time limit, and the library keeps its own default.
    pub timeout: Option<Duration>,
    pub options: Options,
    pub requests: Vec<Request>,
}

/// Why a job could not be taken: a malformed job (`error`) or one this driver cannot do
/// exactly (`unsupported`).
#[derive(Debug)]
pub enum Refusal {
    Error(String),
    Unsupported(String),
}

fn bad(message: String) -> Refusal {
    Refusal::Error(format!("bad job: {message}"))
}

fn string_of(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, Refusal> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad(format!("{key} must be a string, got {other}"))),
    }
}

fn opt_bool_of(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, Refusal> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(bad(format!("{key} must be true or false, got {other}"))),
    }
}

fn bool_of(obj: &Map<String, Value>, key: &str, default: bool) -> Result<bool, Refusal> {
    Ok(opt_bool_of(obj, key)?.unwrap_or(default))
}

fn pairs_of(obj: &Map<String, Value>, key: &str) -> Result<Option<Vec<(String, String)>>, Refusal> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(bad(format!("{key}.{k} must be a string, got {other}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(bad(format!("{key} must be an object, got {other}"))),
    }
}

impl Request {
    fn parse(r: usize, value: &Value) -> Result<Request, Refusal> {
        let obj = value.as_object().ok_or_else(|| bad(format!("request {r} is not an object")))?;
        let method = string_of(obj, "method")?.ok_or_else(|| bad(format!("request {r} has no method")))?;
        let url = string_of(obj, "url")?.ok_or_else(|| bad(format!("request {r} has no url")))?;
        let repeat = match obj.get("repeat") {
            None | Some(Value::Null) => 1,
            Some(v) => v.as_u64().ok_or_else(|| bad(format!("request {r}: repeat must be a count, got {v}")))?,
        };
        let form = pairs_of(obj, "form")?;
        let multipart = match string_of(obj, "form_encoding")?.as_deref() {
            None | Some("urlencoded") => false,
            Some("multipart") => true,
            Some(other) => return Err(Refusal::Unsupported(format!("form_encoding {other:?} is not known"))),
        };
        let body_file = string_of(obj, "body_file")?;
        if form.is_some() && body_file.is_some() {
            return Err(bad(format!("request {r} has both form and body_file")));
        }
        let sink_path = match string_of(obj, "sink")?.as_deref() {
            None | Some("memory") => None,
            Some("file") => Some(
                string_of(obj, "sink_path")?.ok_or_else(|| bad(format!("request {r}: sink file without sink_path")))?,
            ),
            Some(other) => return Err(Refusal::Unsupported(format!("sink {other:?} is not known"))),
        };
        Ok(Request {
            r,
            method: method.to_ascii_uppercase(),
            url,
            repeat,
            headers: pairs_of(obj, "headers")?.unwrap_or_default(),
            form,
            multipart,
            body_file,
            content_type: string_of(obj, "content_type")?,
            follow_redirects: opt_bool_of(obj, "follow_redirects")?,
            sink_path,
        })
    }
}

impl Options {
    fn parse(value: Option<&Value>) -> Result<Options, Refusal> {
        let mut options = Options::default();
        let map = match value {
            None | Some(Value::Null) => return Ok(options),
            Some(Value::Object(map)) => map,
            Some(other) => return Err(bad(format!("options must be an object, got {other}"))),
        };
        for (name, value) in map {
            if value.is_null() {
                continue; // null: the client's own default, always fine
            }
            let wrong = |kind: &str| Refusal::Unsupported(format!("option {name} must be {kind}, got {value}"));
            match name.as_str() {
                "tcp_nodelay" => options.tcp_nodelay = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?),
                "expect_100" => options.expect_100 = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?),
                "max_host_connections" => {
                    let n = value.as_u64().filter(|n| *n >= 1).ok_or_else(|| wrong("a positive integer"))?;
                    options.max_host_connections = Some(n);
                }
                "share" => {
                    let items = value.as_array().ok_or_else(|| wrong("a list"))?;
                    let share = items
                        .iter()
                        .map(|item| match item.as_str() {
                            Some(s @ ("dns" | "tls" | "connections")) => Ok(s.to_string()),
                            _ => Err(wrong("a list of \"dns\", \"tls\", \"connections\"")),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    options.share = Some(share);
                }
                "multi_api" => match value.as_str() {
                    Some(s @ ("multi" | "multi_socket")) => options.multi_api = Some(s.to_string()),
                    _ => return Err(wrong("\"multi\" or \"multi_socket\"")),
                },
                "accept_encoding" => match value.as_str() {
                    Some("library") => options.accept_encoding = Some("library".to_string()),
                    _ => return Err(wrong("\"library\"")),
                },
                _ => {} // unknown to protocol version 1: refused below unless the driver knows it
            }
            options.given.push((name.clone(), value.clone()));
        }
        Ok(options)
    }
}

impl Job {
    /// Build from the `job` object of a job message; `Refusal::Unsupported` for values this
    /// protocol version does not know.
    pub fn parse(value: &Value) -> Result<Job, Refusal> {
        let obj = value.as_object().ok_or_else(|| bad("the job is not an object".into()))?;
        let http = match string_of(obj, "http")?.as_deref() {
            None | Some("1.1") => Http::H1,
            Some("2") => Http::H2,
            Some("h2c") => Http::H2c,
            Some("3") => Http::H3,
            Some(other) => return Err(Refusal::Unsupported(format!("http {other:?} is not known"))),
        };
        let concurrency = match obj.get("concurrency") {
            None | Some(Value::Null) => 1,
            Some(v) => {
                v.as_u64().filter(|n| *n >= 1).ok_or_else(|| bad(format!("concurrency must be at least 1, got {v}")))?
            }
        };
        let timeout = match obj.get("timeout_s") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Duration::from_secs_f64(
                v.as_f64().filter(|t| *t > 0.0).ok_or_else(|| bad(format!("timeout_s must be positive, got {v}")))?,
            )),
        };
        let requests = match obj.get("requests") {
            Some(Value::Array(list)) => {
                list.iter().enumerate().map(|(r, v)| Request::parse(r, v)).collect::<Result<Vec<_>, _>>()?
            }
            _ => return Err(bad("requests must be a list".into())),
        };
        Ok(Job {
            scenario: string_of(obj, "scenario")?.unwrap_or_default(),
            verify: bool_of(obj, "verify", false)?,
            http,
            tls_ca: string_of(obj, "tls_ca")?,
            concurrency: concurrency as usize,
            keep_alive: bool_of(obj, "keep_alive", true)?,
            cookies: bool_of(obj, "cookies", false)?,
            accept_gzip: bool_of(obj, "accept_gzip", false)?,
            timeout,
            options: Options::parse(obj.get("options"))?,
            requests,
        })
    }

    /// Every request to do, as indexes into `requests`, in order, repeats expanded.
    pub fn work(&self) -> Vec<usize> {
        self.requests.iter().flat_map(|req| std::iter::repeat_n(req.r, req.repeat as usize)).collect()
    }

    /// How many requests the job does (repeats counted).
    pub fn total(&self) -> usize {
        self.requests.iter().map(|req| req.repeat as usize).sum()
    }

    /// For clients whose redirect policy is set per client: the setting every entry that names
    /// one agrees on, `None` when no entry names one (the client keeps its own default) or when
    /// they differ ([`Job::mixes_redirects`]).
    pub fn follow_redirects(&self) -> Option<bool> {
        let mut named = self.requests.iter().filter_map(|req| req.follow_redirects);
        let first = named.next()?;
        named.all(|follow| follow == first).then_some(first)
    }

    /// The job leaves Accept-Encoding and decoding to the library as it ships (the option
    /// accept_encoding = "library"): the driver sets no Accept-Encoding of its own.
    pub fn library_encoding(&self) -> bool {
        self.options.accept_encoding.as_deref() == Some("library")
    }

    /// True when some entries follow redirects and others do not.
    pub fn mixes_redirects(&self) -> bool {
        let named = || self.requests.iter().filter_map(|req| req.follow_redirects);
        named().any(|f| f) && named().any(|f| !f)
    }
}

/// accept_encoding "library", for a driver's OPTIONS: the library's own Accept-Encoding.
pub const LIBRARY_ENCODING: Opt = Opt::only("accept_encoding", &["\"library\""], "");

/// One job option a driver knows, and the values it honours exactly.
#[derive(Clone, Copy, Debug)]
pub struct Opt {
    pub name: &'static str,
    /// `None`: every valid value; `Some(values)`: only these, as compact JSON (`"true"`)
    pub only: Option<&'static [&'static str]>,
    /// why other values (or all of them) cannot be honoured
    pub why: &'static str,
}

impl Opt {
    /// Every valid value is honoured.
    pub const fn any(name: &'static str) -> Opt {
        Opt { name, only: None, why: "" }
    }

    /// Only these values (compact JSON) are honoured, for the reason given.
    pub const fn only(name: &'static str, values: &'static [&'static str], why: &'static str) -> Opt {
        Opt { name, only: Some(values), why }
    }

    /// No value can be honoured, for the reason given.
    pub const fn never(name: &'static str, why: &'static str) -> Opt {
        Opt { name, only: Some(&[]), why }
    }
}

/// Why `job` cannot be done exactly by a driver honouring `options`: a non-null option it does
/// not know or a value it cannot honour; `None` when it can. (Capabilities are the lab's to
/// check: it never sends a job that needs one the manifest does not claim.)
pub fn refusal(job: &Job, options: &[Opt]) -> Option<String> {
    let because = |why: &str| if why.is_empty() { String::new() } else { format!(": {why}") };
    for (name, value) in &job.options.given {
        let Some(opt) = options.iter().find(|o| o.name == name) else {
            return Some(format!("option {name} is not supported"));
        };
        match opt.only {
            None => {}
            Some([]) => return Some(format!("option {name} is not supported{}", because(opt.why))),
            Some(values) => {
                let text = value.to_string();
                if !values.contains(&text.as_str()) {
                    return Some(format!(
                        "option {name}={text} cannot be honoured (only {}){}",
                        values.join(", "),
                        because(opt.why)
                    ));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(value: Value) -> Job {
        Job::parse(&value).unwrap()
    }

    #[test]
    fn parses_a_job_and_expands_the_work() {
        let j = job(json!({"scenario": "s", "verify": true, "http": "h2c", "concurrency": 3, "timeout_s": 1.5,
            "options": {"tcp_nodelay": true, "max_host_connections": null},
            "requests": [{"method": "post", "url": "http://x/echo", "repeat": 2, "form": {"a": "1 2", "b": "&"}},
                         {"method": "GET", "url": "https://x/f", "sink": "file", "sink_path": "/tmp/s"}]}));
        assert_eq!((j.http, j.concurrency, j.timeout), (Http::H2c, 3, Some(Duration::from_millis(1500))));
        assert_eq!(j.options.tcp_nodelay, Some(true));
        assert_eq!(j.requests[0].method, "POST");
        assert_eq!(j.requests[0].urlencoded(), "a=1+2&b=%26");
        assert_eq!(j.work(), vec![0, 0, 1]);
        assert_eq!(j.requests[1].sink_path.as_deref(), Some("/tmp/s"));
        assert_eq!(j.requests[0].follow_redirects, None);
        assert_eq!((j.follow_redirects(), j.mixes_redirects()), (None, false));
    }

    #[test]
    fn a_job_that_names_no_timeout_leaves_the_librarys_own() {
        let j = job(json!({"timeout_s": null, "requests": [{"method": "GET", "url": "http://x/"}]}));
        assert_eq!(j.timeout, None);
    }

    #[test]
    fn malformed_jobs_are_errors_and_unknown_values_unsupported() {
        assert!(matches!(Job::parse(&json!({"requests": 1})), Err(Refusal::Error(_))));
        assert!(matches!(Job::parse(&json!({"http": "h3", "requests": []})), Err(Refusal::Unsupported(_))));
        assert_eq!(job(json!({"http": "3", "requests": []})).http, Http::H3);
        let sink = json!({"requests": [{"method": "GET", "url": "u", "sink": "pipe"}]});
        assert!(matches!(Job::parse(&sink), Err(Refusal::Unsupported(_))));
        let options = json!({"options": {"tcp_nodelay": 1}, "requests": []});
        assert!(matches!(Job::parse(&options), Err(Refusal::Unsupported(_))));
    }

    #[test]
    fn refuses_options_the_driver_does_not_honour() {
        const OPTS: &[Opt] =
            &[Opt::only("tcp_nodelay", &["true"], "always on"), Opt::never("share", "no share handle")];
        let plain =
            |options: Value| job(json!({"options": options, "requests": [{"method": "GET", "url": "https://x/"}]}));
        assert_eq!(refusal(&plain(json!({"tcp_nodelay": true})), OPTS), None);
        assert_eq!(
            refusal(&plain(json!({"tcp_nodelay": false})), OPTS).unwrap(),
            "option tcp_nodelay=false cannot be honoured (only true): always on"
        );
        assert_eq!(
            refusal(&plain(json!({"share": ["dns"]})), OPTS).unwrap(),
            "option share is not supported: no share handle"
        );
        assert_eq!(refusal(&plain(json!({"expect_100": false})), OPTS).unwrap(), "option expect_100 is not supported");
        assert_eq!(refusal(&plain(json!({"future_knob": 1})), OPTS).unwrap(), "option future_knob is not supported");
        // capabilities are the lab's to check, not the driver's
        let cookies = job(json!({"cookies": true, "keep_alive": false, "concurrency": 8, "requests": []}));
        assert_eq!(refusal(&cookies, OPTS), None);
    }

    #[test]
    fn follow_redirects_is_true_false_or_absent() {
        let entries = |follows: &[Value]| {
            let requests: Vec<Value> = follows
                .iter()
                .map(|f| match f {
                    Value::Null => json!({"method": "GET", "url": "u"}),
                    f => json!({"method": "GET", "url": "u", "follow_redirects": f}),
                })
                .collect();
            job(json!({ "requests": requests }))
        };
        let j = entries(&[json!(true), json!(false), Value::Null]);
        let named: Vec<_> = j.requests.iter().map(|r| r.follow_redirects).collect();
        assert_eq!(named, vec![Some(true), Some(false), None]);
        assert_eq!((j.follow_redirects(), j.mixes_redirects()), (None, true));
        // an entry that does not redirect has no say in the client's policy
        let j = entries(&[Value::Null, json!(false), Value::Null]);
        assert_eq!((j.follow_redirects(), j.mixes_redirects()), (Some(false), false));
        let j = entries(&[json!(true), Value::Null]);
        assert_eq!((j.follow_redirects(), j.mixes_redirects()), (Some(true), false));
        let j = entries(&[Value::Null]);
        assert_eq!((j.follow_redirects(), j.mixes_redirects()), (None, false));
        let bad = json!({"requests": [{"method": "GET", "url": "u", "follow_redirects": "yes"}]});
        assert!(matches!(Job::parse(&bad), Err(Refusal::Error(_))));
    }
}
