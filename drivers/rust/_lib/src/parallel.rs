//! Up to `concurrency` requests in flight: a blocking client shared by threads
//! ([`BlockingDriver`], run as [`Threads`]) or an async client on tokio ([`AsyncDriver`], run as
//! [`Parallel`], feature `tokio`). Either way the job's requests are one queue: each worker
//! takes the next one until none is left and records into an `Outcomes` of its own (no lock
//! between workers), taken into the trial's when all are done. With `concurrency` 1 the
//! requests go one after another, in order.

#[cfg(feature = "tokio")]
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

#[cfg(feature = "tokio")]
use tokio::runtime::Runtime;

use crate::{Driver, Error, Job, Opt, Outcomes, Request, Response, Versions};

/// The job's requests (entry indexes, repeats expanded, in order), handed out one at a time to
/// whichever worker asks next.
struct Queue {
    work: Vec<usize>,
    next: AtomicUsize,
}

impl Queue {
    fn new(job: &Job) -> Queue {
        Queue { work: job.work(), next: AtomicUsize::new(0) }
    }

    /// The next request's entry, `None` when every request is taken.
    fn take(&self) -> Option<usize> {
        self.work.get(self.next.fetch_add(1, Ordering::Relaxed)).copied()
    }

    /// How many workers the job has: its concurrency, but no more than it has requests.
    fn workers(job: &Job) -> usize {
        job.concurrency.clamp(1, job.total().max(1))
    }

    /// Room for one worker's share of the outcomes.
    fn share(&self, workers: usize) -> usize {
        self.work.len() / workers + 1
    }
}

/// A blocking client library whose client is shared by threads (`Send + Sync`, as reqwest's
/// blocking `Client`, ureq's `Agent` and isahc's `HttpClient` are).
pub trait BlockingDriver: 'static {
    /// The client and whatever the driver keeps with it for the job.
    type Client: Send + Sync + 'static;

    /// The job options this driver knows; any other non-null option is refused.
    const OPTIONS: &'static [Opt];

    /// True when the driver forces HTTP/3 for an `http: "3"` job (see [`Driver::HTTP3`]).
    const HTTP3: bool = false;

    /// Library versions for the hello message.
    fn versions(&self) -> Versions;

    /// A reason this driver cannot do `job` exactly, beyond the options it honours.
    fn refuse(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Build the client. No connection may be opened here.
    fn open(&self, job: &Job) -> Result<Self::Client, Error>;

    /// Do one request of `job` on the shared client; an error is a request that got no response.
    fn request(client: &Self::Client, job: &Job, req: &Request) -> Result<Response, Error>;
}

type Task = Box<dyn FnOnce() + Send>;

/// A thread of the pool, waiting for tasks until its sender is dropped.
struct Worker {
    tasks: mpsc::Sender<Task>,
    thread: JoinHandle<()>,
}

impl Worker {
    fn start() -> Worker {
        let (tasks, waiting) = mpsc::channel::<Task>();
        let thread = std::thread::Builder::new()
            .name("lab-worker".into())
            .spawn(move || {
                for task in waiting {
                    task();
                }
            })
            .expect("cannot start a worker thread");
        Worker { tasks, thread }
    }
}

/// A [`BlockingDriver`] and the job's client, as a [`Driver`]: one request after another on the
/// calling thread, or `concurrency` threads sharing the client, each taking the next request in
/// turn. The threads are started with the client (before `ready`: starting them is not the timed
/// work) and stopped when it is closed.
pub struct Threads<B: BlockingDriver> {
    driver: B,
    client: Option<Arc<B::Client>>,
    workers: Vec<Worker>,
}

impl<B: BlockingDriver> Threads<B> {
    pub fn new(driver: B) -> Self {
        Threads { driver, client: None, workers: Vec::new() }
    }

    /// Threads enough for `count` workers.
    fn start(&mut self, count: usize) {
        while self.workers.len() < count {
            self.workers.push(Worker::start());
        }
    }
}

impl<B: BlockingDriver> Driver for Threads<B> {
    const OPTIONS: &'static [Opt] = B::OPTIONS;
    const HTTP3: bool = B::HTTP3;

    fn versions(&self) -> Versions {
        self.driver.versions()
    }

    fn refuse(&self, job: &Job) -> Option<String> {
        self.driver.refuse(job)
    }

    fn open(&mut self, job: &Arc<Job>) -> Result<(), Error> {
        self.client = Some(Arc::new(self.driver.open(job)?));
        if Queue::workers(job) > 1 {
            self.start(Queue::workers(job));
        }
        Ok(())
    }

    fn run_all<O: Outcomes>(&mut self, job: &Arc<Job>, into: &mut O) {
        let Some(client) = self.client.clone() else { return };
        let workers = Queue::workers(job);
        if workers == 1 {
            for r in job.work() {
                into.add(r, B::request(&client, job, &job.requests[r]));
            }
            return;
        }
        self.start(workers); // a later bare round may ask for more than the first one's job
        let queue = Arc::new(Queue::new(job));
        let (done_tx, done_rx) = mpsc::channel::<O>();
        for worker in &self.workers[..workers] {
            let (queue, job, client, done_tx) = (queue.clone(), job.clone(), client.clone(), done_tx.clone());
            let task: Task = Box::new(move || {
                let done = {
                    let client = client; // dropped before the answer: the closing thread owns the client
                    let mut done = O::with_room(queue.share(workers));
                    while let Some(r) = queue.take() {
                        done.add(r, B::request(&client, &job, &job.requests[r]));
                    }
                    done
                };
                let _ = done_tx.send(done);
            });
            if worker.tasks.send(task).is_err() {
                into.add(0, Err("a worker thread is gone".into()));
            }
        }
        drop(done_tx);
        let mut answered = 0;
        for done in done_rx {
            into.merge(done);
            answered += 1;
        }
        if answered < workers {
            into.add(0, Err("a worker thread failed".into()));
        }
    }

    fn close(&mut self) {
        self.client = None; // the last reference: drops the pool and its connections
        for worker in self.workers.drain(..) {
            drop(worker.tasks);
            let _ = worker.thread.join();
        }
    }
}

/// A client library driven from async code on tokio.
#[cfg(feature = "tokio")]
pub trait AsyncDriver: 'static {
    /// The client: cheap to clone (shared pool), one per job.
    type Client: Clone + Send + Sync + 'static;

    /// The job options this driver knows; any other non-null option is refused.
    const OPTIONS: &'static [Opt];

    /// True when the driver forces HTTP/3 for an `http: "3"` job (see [`Driver::HTTP3`]).
    const HTTP3: bool = false;

    /// Library versions for the hello message.
    fn versions(&self) -> Versions;

    /// A reason this driver cannot do `job` exactly, beyond the options it honours.
    fn refuse(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Build the client (inside the runtime's context). No connection may be opened here.
    fn open(&self, job: &Job) -> Result<Self::Client, Error>;

    /// One request of entry `r` of the job.
    fn request(client: Self::Client, job: Arc<Job>, r: usize) -> impl Future<Output = Result<Response, Error>> + Send;
}

/// An [`AsyncDriver`] with its runtime and the job's client, as a [`Driver`]: the process's
/// multi-threaded runtime (what `#[tokio::main]` gives a program; all jobs of the process share
/// it, like the Python drivers' event loop), `concurrency` worker tasks on it in the timed phase.
#[cfg(feature = "tokio")]
pub struct Parallel<A: AsyncDriver> {
    driver: A,
    rt: Runtime,
    client: Option<A::Client>,
}

#[cfg(feature = "tokio")]
impl<A: AsyncDriver> Parallel<A> {
    pub fn new(driver: A) -> Self {
        let rt =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("cannot start the tokio runtime");
        Parallel { driver, rt, client: None }
    }
}

#[cfg(feature = "tokio")]
impl<A: AsyncDriver> Driver for Parallel<A> {
    const OPTIONS: &'static [Opt] = A::OPTIONS;
    const HTTP3: bool = A::HTTP3;

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

/// Run every request of `job` on `concurrency` tasks: `request(client, job, r)` does one request
/// of entry `r`. With `concurrency` 1 the requests go one after another in the future that
/// `block_on` runs on the calling thread, as the body of a `#[tokio::main]` program's loop runs
/// (the client's connection tasks on the runtime's workers): spawned onto a worker, the loop would
/// share the worker with the connection task and skip the wake-up between threads that every
/// request of such a program pays.
#[cfg(feature = "tokio")]
fn run_all<C, F, Fut, O>(rt: &Runtime, job: &Arc<Job>, client: &C, request: F, into: &mut O)
where
    O: Outcomes,
    C: Clone + Send + 'static,
    F: Fn(C, Arc<Job>, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Response, Error>> + Send + 'static,
{
    let queue = Arc::new(Queue::new(job));
    let workers = Queue::workers(job);
    if workers == 1 {
        rt.block_on(async {
            while let Some(r) = queue.take() {
                into.add(r, request(client.clone(), job.clone(), r).await);
            }
        });
        return;
    }
    rt.block_on(async {
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let (queue, job, client, request) = (queue.clone(), job.clone(), client.clone(), request.clone());
                tokio::spawn(async move {
                    let mut done = O::with_room(queue.share(workers));
                    while let Some(r) = queue.take() {
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
    use std::time::Duration;

    /// Requests in flight now and at most (the fake client); entry 1 fails.
    #[derive(Clone, Default)]
    struct Counters {
        in_flight: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        /// worker threads or tasks seen
        threads: Arc<std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>>,
    }

    impl Counters {
        fn begin(&self) {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            self.threads.lock().unwrap().insert(std::thread::current().id());
        }

        fn end(&self, r: usize) -> Result<Response, Error> {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            match r {
                1 => Err("refused".into()),
                _ => Ok(Response::memory(200, http::Version::HTTP_11, b"", false)),
            }
        }

        fn most(&self) -> usize {
            self.most.load(Ordering::SeqCst)
        }
    }

    fn job(concurrency: usize) -> Arc<Job> {
        let requests = serde_json::json!([{"method": "GET", "url": "http://x/a", "repeat": 30},
                                          {"method": "GET", "url": "http://x/fail", "repeat": 10}]);
        Arc::new(Job::parse(&serde_json::json!({"concurrency": concurrency, "requests": requests})).unwrap())
    }

    /// Runs the job into a report, then again into a tally (a second bare round on the same
    /// client) and checks both.
    fn run_twice<D: Driver>(driver: &mut D, job: &Arc<Job>) {
        driver.open(job).unwrap();
        let mut report = Report::with_capacity(job.total());
        driver.run_all(job, &mut report);
        assert_eq!((report.responses.len(), report.errors.len()), (30, 10));
        let mut tally = Tally::default();
        driver.run_all(job, &mut tally);
        assert_eq!((tally.responses, tally.errors, tally.first_error.as_deref()), (30, 10, Some("refused")));
    }

    struct FakeBlocking;

    impl BlockingDriver for FakeBlocking {
        type Client = Counters;
        const OPTIONS: &'static [Opt] = &[];

        fn versions(&self) -> Versions {
            crate::base_versions()
        }

        fn open(&self, _job: &Job) -> Result<Counters, Error> {
            Ok(Counters::default())
        }

        fn request(client: &Counters, _job: &Job, req: &Request) -> Result<Response, Error> {
            client.begin();
            std::thread::sleep(Duration::from_millis(2));
            client.end(req.r)
        }
    }

    #[test]
    fn threads_share_the_client_and_record_every_outcome() {
        let mut driver = Threads::new(FakeBlocking);
        let job = job(4);
        run_twice(&mut driver, &job);
        assert_eq!(driver.workers.len(), 4); // started with the client, kept for the second round
        let client = driver.client.clone().unwrap();
        assert!((2..=4).contains(&client.most()), "{} requests in flight at most", client.most());
        assert!(!client.threads.lock().unwrap().contains(&std::thread::current().id()));
        driver.close();
        assert!(driver.workers.is_empty());
        assert_eq!(Arc::strong_count(&client), 1); // no worker keeps the closed client
    }

    #[test]
    fn threads_with_concurrency_one_run_in_order_on_the_calling_thread() {
        let mut driver = Threads::new(FakeBlocking);
        let job = job(1);
        driver.open(&job).unwrap();
        assert!(driver.workers.is_empty());
        let mut report = Report::default();
        driver.run_all(&job, &mut report);
        let order: Vec<usize> = report.responses.iter().map(|(r, _)| *r).collect();
        assert_eq!((order, report.errors.len()), (vec![0; 30], 10));
        let client = driver.client.clone().unwrap();
        assert_eq!(client.most(), 1);
        assert_eq!(*client.threads.lock().unwrap(), [std::thread::current().id()].into());
        driver.close();
    }

    #[test]
    fn no_more_workers_than_requests() {
        let requests = serde_json::json!([{"method": "GET", "url": "http://x/a", "repeat": 3}]);
        let job = Arc::new(Job::parse(&serde_json::json!({"concurrency": 20, "requests": requests})).unwrap());
        let mut driver = Threads::new(FakeBlocking);
        driver.open(&job).unwrap();
        assert_eq!(driver.workers.len(), 3);
        driver.close();
    }

    #[cfg(feature = "tokio")]
    struct FakeAsync;

    #[cfg(feature = "tokio")]
    impl AsyncDriver for FakeAsync {
        type Client = Counters;
        const OPTIONS: &'static [Opt] = &[];

        fn versions(&self) -> Versions {
            crate::base_versions()
        }

        fn open(&self, _job: &Job) -> Result<Counters, Error> {
            Ok(Counters::default())
        }

        async fn request(client: Counters, _job: Arc<Job>, r: usize) -> Result<Response, Error> {
            client.begin();
            tokio::time::sleep(Duration::from_millis(2)).await;
            client.end(r)
        }
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn parallel_tasks_record_every_outcome_into_a_report_or_a_tally() {
        let mut driver = Parallel::new(FakeAsync);
        let job = job(4);
        run_twice(&mut driver, &job);
        let most = driver.client.as_ref().unwrap().most();
        assert!((2..=4).contains(&most), "{most} requests in flight at most");
        driver.close();
    }

    #[cfg(feature = "tokio")]
    #[test]
    fn parallel_with_concurrency_one_runs_in_order_on_the_calling_thread() {
        let mut driver = Parallel::new(FakeAsync);
        let job = job(1);
        driver.open(&job).unwrap();
        let mut report = Report::default();
        driver.run_all(&job, &mut report);
        let order: Vec<usize> = report.responses.iter().map(|(r, _)| *r).collect();
        assert_eq!((order, report.errors.len()), (vec![0; 30], 10));
        let client = driver.client.as_ref().unwrap();
        assert_eq!(client.most(), 1);
        assert_eq!(*client.threads.lock().unwrap(), [std::thread::current().id()].into());
    }
}
