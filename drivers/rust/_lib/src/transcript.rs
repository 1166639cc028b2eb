//! The golden transcript (drivers/contract/transcript.json) through the message loop, with the
//! transcript's contract client behind the blocking seam ([`BlockingDriver`], run as [`Threads`]:
//! one request after another, or `concurrency` threads).

use crate::parallel::{BlockingDriver, Threads};
use crate::{Error, Job, Loop, Opt, Request, Response, Versions, base_versions};
use serde_json::Value;

/// The transcript's `client`.
struct Contract;

impl BlockingDriver for Contract {
    type Client = ();
    const OPTIONS: &'static [Opt] =
        &[Opt::any("tcp_nodelay"), Opt::only("expect_100", &["false"], "the contract client sends no Expect")];

    fn versions(&self) -> Versions {
        let mut versions = base_versions();
        versions.push(("contract", "1".into()));
        versions
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        (job.scenario == "refused-by-client").then(|| "the contract client refuses this job".into())
    }

    fn open(&self, job: &Job) -> Result<(), Error> {
        if job.scenario == "open-fails" { Err("the contract client cannot be built".into()) } else { Ok(()) }
    }

    fn request(_client: &(), job: &Job, req: &Request) -> Result<Response, Error> {
        if req.url.contains("/fail") {
            return Err("connection refused".into());
        }
        let status = req.url.split("/status/").nth(1).and_then(|rest| rest.get(..3)).and_then(|s| s.parse().ok());
        Ok(Response::memory(status.unwrap_or(200), http::Version::HTTP_11, req.url.as_bytes(), job.verify))
    }
}

/// The transcript's comparison: equal JSON, where a <...> string in `want` is a pattern.
fn matches(want: &Value, got: &Value) -> bool {
    if let Some(pattern) = want.as_str().filter(|w| w.starts_with('<') && w.ends_with('>')) {
        if pattern == "<any string>" {
            return got.is_string();
        }
        if pattern == "<any number>" {
            return got.as_f64().is_some_and(|n| n >= 0.0);
        }
        if let Some(text) = pattern.strip_prefix("<text with: ").and_then(|p| p.strip_suffix('>')) {
            return got.as_str().is_some_and(|g| g.contains(text));
        }
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let rest = w.get("<more>");
            w.iter().all(|(k, v)| k == "<more>" || g.get(k).is_some_and(|gv| matches(v, gv)))
                && g.iter().all(|(k, gv)| w.contains_key(k) || rest.is_some_and(|r| matches(r, gv)))
        }
        (Value::Array(w), Value::Array(g)) => w.len() == g.len() && w.iter().zip(g).all(|(w, g)| matches(w, g)),
        _ => want == got,
    }
}

#[test]
fn the_loop_answers_the_transcript() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contract/transcript.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let transcript: Value = serde_json::from_str(&text).expect("transcript.json is JSON");
    let mut failed = Vec::new();
    for case in transcript["cases"].as_array().expect("cases") {
        let input: String = case["lab"]
            .as_array()
            .expect("lab")
            .iter()
            .map(|m| format!("{}\n", m.as_str().map_or_else(|| m.to_string(), str::to_string)))
            .collect();
        let mut driver = Threads::new(Contract);
        let mut lp = Loop { driver: &mut driver, out: Vec::new(), job: None, bare: false };
        lp.run(input.as_bytes());
        let out = String::from_utf8(lp.out).expect("UTF-8");
        let got: Vec<Value> = out.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
        if !matches(&case["driver"], &Value::Array(got)) {
            failed.push(format!("{}: {}\nwant {}\ngot  {out}", case["name"], case["about"], case["driver"]));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn the_comparison_takes_patterns_and_nothing_else() {
    use serde_json::json;
    assert!(matches(&json!({"a": "<text with: bad>", "<more>": "<any string>"}), &json!({"a": "a bad job", "b": "x"})));
    assert!(!matches(&json!({"a": 1}), &json!({"a": 1, "b": "x"})));
    assert!(!matches(&json!([1, 2]), &json!([2, 1])) && !matches(&json!("<any number>"), &json!(true)));
}
