//! Drivers on a tokio runtime: up to `concurrency` requests in flight.
//!
//! A driver implements [`AsyncDriver`] (build the client, do one request as a future) and runs
//! as [`Parallel`], which owns the process's multi-threaded runtime (what `#[tokio::main]` gives
//! a program; all jobs of the process share it, like the Python drivers' event loop). For the
//! timed phase `concurrency` worker tasks are spawned on it; each takes the next request of the
//! job until none is left.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Runtime;

use crate::{Driver, Error, Job, Opt, Outcomes, Response, Versions};

/// A client library driven from async code on tokio.
pub trait AsyncDriver: 'static {
    /// The client: cheap to clone (shared pool), one per job.
    type Client: Clone + Send + Sync + 'static;

    /// The job options this driver knows; any other non-null option is refused.
    const OPTIONS: &'static [Opt];

    /// Library versions for the hello message.
    fn versions(&self) -> Versions;

    /// A reason this driver cannot do `job` exactly, beyond capabilities and options.
    fn refuse(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Build the client (inside the runtime's context). No connection may be opened here.
    fn open(&self, job: &Job) -> Result<Self::Client, Error>;

    /// One request of entry `r` of the job.
    fn request(client: Self::Client, job: Arc<Job>, r: usize) -> impl Future<Output = Result<Response, Error>> + Send;
}

/// An [`AsyncDriver`] with its runtime and the job's client, as a [`Driver`].
pub struct Parallel<A: AsyncDriver> {
    driver: A,
    rt: Runtime,
    client: Option<A::Client>,
}

impl<A: AsyncDriver> Parallel<A> {
    pub fn new(driver: A) -> Self {
        let rt =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("cannot start the tokio runtime");
        Parallel { driver, rt, client: None }
    }
}

impl<A: AsyncDriver> Driver for Parallel<A> {
    const OPTIONS: &'static [Opt] = A::OPTIONS;

    fn versions(&self) -> Versions {
        self.driver.versions()
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        self.driver.refuse(job)
    }

    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error> {
        let _runtime = self.rt.enter();
        self.client = Some(self.driver.open(job)?);
        Ok(())
    }

    fn run_all<O: Outcomes>(&mut self, job: &Arc<Job>, into: &mut O) {
        if let Some(client) = &self.client {
            run_all(&self.rt, job, client, A::request, into);
        }
    }

    fn close(&mut self) {
        let _runtime = self.rt.enter();
        self.client = None; // drops the pool: its connections close on the runtime's workers
    }
}

/// Run every request of `job`: `request(client, job, r)` does one request of entry `r`.
/// With `concurrency` 1 the requests go one after another, in order. Each worker records into
/// an `O` of its own (no lock between workers), taken into `into` when all are done.
fn run_all<C, F, Fut, O>(rt: &Runtime, job: &Arc<Job>, client: &C, request: F, into: &mut O)
where
    O: Outcomes,
    C: Clone + Send + 'static,
    F: Fn(C, Arc<Job>, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Response, Error>> + Send + 'static,
{
    let work = Arc::new(job.work());
    let next = Arc::new(AtomicUsize::new(0));
    let workers = job.concurrency.clamp(1, work.len().max(1));
    rt.block_on(async {
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let (work, next, job, client, request) =
                    (work.clone(), next.clone(), job.clone(), client.clone(), request.clone());
                tokio::spawn(async move {
                    let mut done = O::with_room(work.len() / workers + 1);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&r) = work.get(i) else { break };
                        done.add(r, request(client.clone(), job.clone(), r).await);
                    }
                    done
                })
            })
            .collect();
        for task in tasks {
            match task.await {
                Ok(done) => into.merge(done),
                Err(e) => into.add(0, Err(format!("a worker task failed: {e}").into())),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Report, Tally};
    use std::sync::atomic::AtomicUsize;

    /// Counts requests in flight (the client is the shared counters); entry 1 fails.
    struct Fake;

    #[derive(Clone, Default)]
    struct Counters {
        in_flight: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    impl AsyncDriver for Fake {
        type Client = Counters;
        const OPTIONS: &'static [Opt] = &[];

        fn versions(&self) -> Versions {
            crate::base_versions()
        }

        fn open(&self, _job: &Job) -> Result<Counters, Error> {
            Ok(Counters::default())
        }

        async fn request(client: Counters, _job: Arc<Job>, r: usize) -> Result<Response, Error> {
            let now = client.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            client.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            client.in_flight.fetch_sub(1, Ordering::SeqCst);
            match r {
                1 => Err("refused".into()),
                _ => Ok(Response::memory(200, http::Version::HTTP_11, b"", false)),
            }
        }
    }

    fn job(concurrency: usize) -> Arc<Job> {
        let requests = serde_json::json!([{"method": "GET", "url": "http://x/a", "repeat": 30},
                                          {"method": "GET", "url": "http://x/fail", "repeat": 10}]);
        Arc::new(Job::parse(&serde_json::json!({"concurrency": concurrency, "requests": requests})).unwrap())
    }

    #[test]
    fn parallel_workers_record_every_outcome_into_a_report_or_a_tally() {
        let mut driver = Parallel::new(Fake);
        let job = job(4);
        driver.open(&job).unwrap();
        let mut report = Report::with_capacity(job.total());
        driver.run_all(&job, &mut report);
        assert_eq!((report.responses.len(), report.errors.len()), (30, 10));
        let mut tally = Tally::default();
        driver.run_all(&job, &mut tally); // the same client, as in a second bare round
        assert_eq!((tally.responses, tally.errors, tally.first_error.as_deref()), (30, 10, Some("refused")));
        let most = driver.client.as_ref().unwrap().most.load(Ordering::SeqCst);
        assert!((2..=4).contains(&most), "{most} requests in flight at most");
        driver.close();
    }

    #[test]
    fn concurrency_one_runs_one_request_at_a_time() {
        let mut driver = Parallel::new(Fake);
        let job = job(1);
        driver.open(&job).unwrap();
        let mut report = Report::default();
        driver.run_all(&job, &mut report);
        assert_eq!((report.responses.len(), report.errors.len()), (30, 10));
        assert_eq!(driver.client.as_ref().unwrap().most.load(Ordering::SeqCst), 1);
    }
}
