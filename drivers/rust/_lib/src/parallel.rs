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

use crate::{Driver, Error, Job, Opt, Report, Response, Versions};

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

    fn run_all(&mut self, job: &Arc<Job>) -> Report {
        match &self.client {
            Some(client) => run_all(&self.rt, job, client, A::request),
            None => Report::default(),
        }
    }

    fn close(&mut self) {
        let _runtime = self.rt.enter();
        self.client = None; // drops the pool: its connections close on the runtime's workers
    }
}

/// Run every request of `job`: `request(client, job, r)` does one request of entry `r`.
/// With `concurrency` 1 the requests go one after another, in order.
fn run_all<C, F, Fut>(rt: &Runtime, job: &Arc<Job>, client: &C, request: F) -> Report
where
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
                    let mut done = Vec::with_capacity(work.len() / workers + 1);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&r) = work.get(i) else { break };
                        done.push((r, request(client.clone(), job.clone(), r).await));
                    }
                    done
                })
            })
            .collect();
        let mut report = Report::with_capacity(work.len());
        for task in tasks {
            match task.await {
                Ok(done) => done.into_iter().for_each(|(r, outcome)| report.add(r, outcome)),
                Err(e) => report.add(0, Err(format!("a worker task failed: {e}").into())),
            }
        }
        report
    })
}
