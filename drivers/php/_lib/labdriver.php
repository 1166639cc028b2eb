<?php
// labdriver: the clientlab driver protocol (docs/driver-protocol.md) for PHP drivers.
//
// A driver extends Lab\Driver: it names the options it honours and supplies versions(),
// prepare(job) (build the client, no connection: its state, or an Unsupported), run(job, state,
// collector) (the timed phase) and finish(state) (close the client). Lab\main() does hello / job /
// ready / go / done / report, refuses jobs with an option the driver does not honour (the lab
// itself never sends a job that needs a capability the driver.toml does not claim), and runs the
// calibration loop (bare: the same run() on one kept client, into a Tally instead of a Report,
// timed by the driver's own clock). Standard extensions only (json, hash).

declare(strict_types=1);

namespace Lab;

const PROTOCOL = 1;
// options known in protocol version 1, with the type each value must have (gettype names)
const OPTION_TYPES = ['tcp_nodelay' => 'boolean', 'max_host_connections' => 'integer', 'share' => 'array',
    'expect_100' => 'boolean', 'multi_api' => 'string', 'accept_encoding' => 'string'];
// accept_encoding = "library": the job leaves Accept-Encoding and decoding to the library as it
// ships (docs/driver-protocol.md §3); a driver that honours it lists it with these values
const LIBRARY_ENCODING = ['library'];

/** prepare()'s answer for a job the client cannot do exactly as asked */
final class Unsupported
{
    public function __construct(public readonly string $reason)
    {
    }
}

abstract class Driver
{
    /** option name => list of the values honoured exactly, or null for every valid value */
    public array $options = [];

    /** the client library and what lies under it, e.g. ['guzzle' => '7.4.5']; php is added */
    abstract public function versions(): array;

    /**
     * Build and configure the client for $job; no connection may be opened, no request sent.
     * Returns the client state handed to run() and finish(), or an Unsupported with the reason.
     */
    abstract public function prepare(array $job): mixed;

    /**
     * The timed phase: every request of the job, each outcome into $report (a Report in a trial,
     * a Tally in a bare round: the same code either way). A bare round after the first runs a new
     * job (only the server's port may differ) on the state an earlier prepare() returned.
     */
    abstract public function run(array $job, mixed $state, Collector $report): void;

    /**
     * Before a bare round after the first, untimed: the kept client is about to run $job, whose
     * server may be on another port, and whose connections the server may have closed while the
     * lab paused the driver. Only a client that must know which connections it holds needs this.
     */
    public function resume(array $job, mixed $state): void
    {
    }

    /** close the client and every connection it holds (called after the report) */
    public function finish(mixed $state): void
    {
    }
}

/** where run() puts each request's outcome: a Report (a trial) or a Tally (a bare round) */
abstract class Collector
{
    /** one response held in memory: $body is the whole decoded body */
    abstract public function add(int $r, int $status, string $http, string $body): void;

    /** one response streamed to $file (sink "file") */
    abstract public function addFile(int $r, int $status, string $http, string $file): void;

    /** one request that got no response */
    abstract public function fail(int $r, string $message): void;

    /** one request that got no response, from an exception */
    final public function failWith(int $r, \Throwable $e): void
    {
        $this->fail($r, get_class($e) . ': ' . $e->getMessage());
    }
}

final class Report extends Collector
{
    // One flat list per field, the items built after `done`: an array per response, kept through
    // the timed phase, made large answers measurably slower than a loop that keeps nothing
    // (docs/measurement.md); appending to these lists costs next to nothing.
    private array $r = [];
    private array $status = [];
    private array $bytes = [];
    private array $http = [];
    private array $sha256 = [];
    public array $errors = [];

    public function __construct(private bool $verify)
    {
    }

    public function add(int $r, int $status, string $http, string $body): void
    {
        // item()'s four appends written out: a method call less on every response; \strlen, not
        // strlen: in a namespace an unqualified name is looked up at run time (Lab\strlen first),
        // so the compiler makes it a function call, where \strlen is one opcode, as in a
        // program's global code
        $this->r[] = $r;
        $this->status[] = $status;
        $this->http[] = $http;
        $this->bytes[] = \strlen($body);
        if ($this->verify) {
            $this->sha256[] = hash('sha256', $body);
        }
    }

    /** the file's size, and its digest when verifying */
    public function addFile(int $r, int $status, string $http, string $file): void
    {
        clearstatcache(true, $file);
        $this->item($r, $status, $http, (int)@filesize($file));
        if ($this->verify) {
            $this->sha256[] = (string)@hash_file('sha256', $file);
        }
    }

    private function item(int $r, int $status, string $http, int $bytes): void
    {
        $this->r[] = $r;
        $this->status[] = $status;
        $this->http[] = $http;
        $this->bytes[] = $bytes;
    }

    /** the responses in the report's wire format */
    public function responses(): array
    {
        $out = [];
        foreach ($this->r as $i => $r) {
            $item = ['r' => $r, 'status' => $this->status[$i], 'bytes' => $this->bytes[$i], 'http' => $this->http[$i]];
            if ($this->verify) {
                $item['sha256'] = $this->sha256[$i];
            }
            $out[] = $item;
        }
        return $out;
    }

    public function fail(int $r, string $message): void
    {
        $this->errors[] = ['r' => $r, 'message' => substr($message, 0, 500)];
    }
}

/**
 * Counts responses and failures and keeps nothing else: the bare round's stand-in for a Report,
 * so that the calibration loop pays for no report a plain program would not build.
 */
final class Tally extends Collector
{
    public int $responses = 0;
    public int $errors = 0;
    public ?string $firstError = null;

    public function add(int $r, int $status, string $http, string $body): void
    {
        $this->responses++;
    }

    public function addFile(int $r, int $status, string $http, string $file): void
    {
        $this->responses++;
    }

    public function fail(int $r, string $message): void
    {
        $this->errors++;
        $this->firstError ??= substr($message, 0, 500);
    }
}

/** every request of the job, in order, each as often as its repeat: [index, entry] */
function work(array $job): \Generator
{
    foreach ($job['requests'] as $r => $req) {
        for ($i = 0, $n = (int)($req['repeat'] ?? 1); $i < $n; $i++) {
            yield [$r, $req];
        }
    }
}

/**
 * why a job cannot be done exactly (an option not honoured), or null; capabilities are the lab's
 * business: it never sends a job that needs one the manifest does not claim
 */
function refusal(array $job, array $honoured): ?string
{
    $options = $job['options'] ?? [];
    ksort($options);
    foreach ($options as $name => $value) {
        if ($value === null) continue;
        if (!array_key_exists($name, $honoured)) return "option $name is not supported";
        if (isset(OPTION_TYPES[$name]) && gettype($value) !== OPTION_TYPES[$name]) {
            return "option $name must be a " . OPTION_TYPES[$name] . ', got ' . json_encode($value);
        }
        $allowed = $honoured[$name];
        if ($allowed !== null && !in_array($value, $allowed, true)) {
            return "option $name=" . json_encode($value) . ' cannot be honoured (only '
                . implode(', ', array_map('json_encode', $allowed)) . ')';
        }
    }
    return null;
}

/** a job option's value, or null for "the client's default" */
function option(array $job, string $name): mixed
{
    return $job['options'][$name] ?? null;
}

/** the job leaves Accept-Encoding and decoding to the library as it ships (accept_encoding "library") */
function library_encoding(array $job): bool
{
    return option($job, 'accept_encoding') === 'library';
}

/**
 * why a client that closes connections only with a "Connection: close" header cannot do $job
 * (keep-alive off over HTTP/2, where that header does not exist), or null
 */
function close_refusal(array $job, string $library): ?string
{
    if (!($job['keep_alive'] ?? true) && $job['http'] !== '1.1') {
        return "$library cannot close HTTP/2 connections per request (Connection: close is HTTP/1.1)";
    }
    return null;
}

function is_multipart(array $req): bool
{
    return isset($req['form']) && ($req['form_encoding'] ?? 'urlencoded') === 'multipart';
}

/**
 * a request entry's follow_redirects: true (follow), false (report the 3xx), or null when absent
 * (the URL does not redirect: the client's own redirect setting stays as it ships)
 */
function follow_redirects(array $req): ?bool
{
    return isset($req['follow_redirects']) ? (bool)$req['follow_redirects'] : null;
}

function to_file(array $req): bool
{
    return ($req['sink'] ?? 'memory') === 'file';
}

/** urlencoded form body, fields in the job's order */
function urlencoded(array $form): string
{
    return http_build_query($form, '', '&', PHP_QUERY_RFC1738);
}

/** the HTTP version of a status line ("HTTP/1.1 200 OK" => "1.1", "HTTP/2 200" => "2") */
function status_line_version(string $line): string
{
    return preg_match('#^HTTP/(\d(?:\.\d)?)#', $line, $m) ? ($m[1] === '2.0' ? '2' : $m[1]) : '?';
}

/** a Debian package's version, for libraries without a version constant (Guzzle 7, Symfony) */
function debian_version(string $package): string
{
    $out = shell_exec('dpkg-query -W -f=\'${Version}\' ' . escapeshellarg($package) . ' 2>/dev/null');
    return is_string($out) && trim($out) !== '' ? trim($out) : 'unknown';
}

/** write one protocol line on the real stdout */
function send(array $message): void
{
    fwrite(STDOUT, json_encode($message, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE) . "\n");
    fflush(STDOUT);
}

/** a log line on stderr (the lab keeps the last ones for a failure message) */
function log(string $line): void
{
    fwrite(STDERR, rtrim($line) . "\n");
}

/**
 * The lab's profile of a go (clientlab/profile/samplers.py): only in a process the lab started
 * for one, with CLIENTLAB_PROFILE_DIR set and excimer loaded. A sampling profiler on the thread's
 * CPU time from go to done; its samples written after done, before the report, as folded stacks
 * (root first, `Class::method (file)`, an internal function `name (php)`) to
 * CLIENTLAB_PROFILE_DIR/<pid>-<n>.folded.
 */
final class Profile
{
    private static int $n = 0;

    private function __construct(private \ExcimerProfiler $profiler, private string $path)
    {
    }

    public static function start(): ?self
    {
        $dir = getenv('CLIENTLAB_PROFILE_DIR');
        if ($dir === false || $dir === '' || !class_exists('ExcimerProfiler', false)) {
            return null;
        }
        $profiler = new \ExcimerProfiler();
        $profiler->setEventType(EXCIMER_CPU);
        $profiler->setPeriod((float)(getenv('CLIENTLAB_EXCIMER_PERIOD') ?: 0.001));
        $profiler->setMaxDepth(256);
        $self = new self($profiler, sprintf('%s/%d-%d.folded', $dir, getmypid(), ++self::$n));
        $profiler->start();
        return $self;
    }

    public function stop(): void
    {
        $this->profiler->stop();
    }

    public function write(): void
    {
        $stacks = [];
        foreach ($this->profiler->getLog() as $entry) {
            $frames = [];
            foreach (array_reverse($entry->getTrace()) as $f) {
                $name = isset($f['closure_line']) ? '{closure}'
                    : (isset($f['function']) ? (isset($f['class']) ? $f['class'] . '::' . $f['function'] : $f['function'])
                    : '(main)');
                $where = isset($f['file']) ? $f['file'] : 'php';
                $frames[] = str_replace([';', ' '], ['?', '_'], $name) . ' (' . str_replace(';', '?', $where) . ')';
            }
            $key = implode(';', $frames);
            $stacks[$key] = ($stacks[$key] ?? 0) + $entry->getEventCount();
        }
        $text = '';
        foreach ($stacks as $stack => $n) {
            $text .= "$stack $n\n";
        }
        file_put_contents($this->path . '.tmp', $text);
        rename($this->path . '.tmp', $this->path);
    }
}

/** the message loop: the job being readied for its go, and the bare rounds' kept client */
final class Loop
{
    private ?array $ready = null; // [job, state] between ready and go
    private mixed $bare = null; // the client state the first bare round built, kept for the next
    private bool $bareOpen = false;

    public function __construct(private Driver $driver)
    {
    }

    /** the message's job, or null (after saying so) when it is not one */
    private static function parse(array $msg): ?array
    {
        $job = is_array($msg['job'] ?? null) ? $msg['job'] : [];
        if (!is_array($job['requests'] ?? null) || !isset($job['http'])) {
            send(['type' => 'error', 'message' => 'bad job: no requests or http']);
            return null;
        }
        return $job;
    }

    /** the message's job and the client built for it, or null (after saying why) */
    private function open(array $msg): ?array
    {
        if (($job = self::parse($msg)) === null) {
            return null;
        }
        if (($reason = refusal($job, $this->driver->options)) !== null) {
            send(['type' => 'unsupported', 'reason' => $reason]);
            return null;
        }
        try {
            $state = $this->driver->prepare($job);
        } catch (\Throwable $e) {
            log((string)$e);
            send(['type' => 'error', 'message' => 'building the client failed: ' . get_class($e) . ': ' . $e->getMessage()]);
            return null;
        }
        if ($state instanceof Unsupported) {
            send(['type' => 'unsupported', 'reason' => $state->reason]);
            return null;
        }
        return [$job, $state];
    }

    /** every request of the job into $collector; a throw from run() counts as one failure */
    private function perform(array $job, mixed $state, Collector $collector): void
    {
        try {
            $this->driver->run($job, $state, $collector);
        } catch (\Throwable $e) {
            log((string)$e);
            $collector->failWith(0, $e);
        }
    }

    /**
     * Close a client and drop the caller's reference to its state (the last one), collecting
     * cycles too, so that its connections go now and not at some later collection.
     */
    private function close(mixed &$state): void
    {
        try {
            $this->driver->finish($state);
        } catch (\Throwable $e) {
            log((string)$e);
        }
        $state = null;
        gc_collect_cycles();
    }

    public function onJob(array $msg): void
    {
        if ($this->ready !== null) {
            $state = $this->ready[1]; // a job that never got its go
            $this->ready = null;
            $this->close($state);
        }
        $this->endBare();
        $this->ready = $this->open($msg);
        if ($this->ready !== null) {
            send(['type' => 'ready']);
        }
    }

    public function onGo(): void
    {
        if ($this->ready === null) {
            send(['type' => 'error', 'message' => 'go without a ready job']);
            return;
        }
        [$job, $state] = $this->ready;
        $this->ready = null;
        $report = new Report((bool)($job['verify'] ?? false));
        $profiler = Profile::start();
        $this->perform($job, $state, $report);
        $profiler?->stop();
        send(['type' => 'done']); // before the report: serialising it is not timed
        $profiler?->write();
        send(['type' => 'report', 'responses' => $report->responses(), 'errors' => $report->errors]);
        unset($report);
        $this->close($state); // no connection survives the job
    }

    /**
     * One round of the calibration loop: the job's requests through run() on the kept client
     * (built by the first round, as a job message would), timed by the driver's own clock, nothing
     * kept but counts.
     */
    public function onBare(array $msg): void
    {
        if ($this->bareOpen) {
            if (($job = self::parse($msg)) === null) {
                return;
            }
            try {
                $this->driver->resume($job, $this->bare);
            } catch (\Throwable $e) {
                log((string)$e);
                send(['type' => 'error', 'message' => 'resuming the client failed: ' . get_class($e) . ': ' . $e->getMessage()]);
                return;
            }
        } else {
            if (($opened = $this->open($msg)) === null) {
                return;
            }
            [$job, $this->bare] = $opened;
            unset($opened);
            $this->bareOpen = true;
        }
        $tally = new Tally();
        $t0 = hrtime(true);
        $this->perform($job, $this->bare, $tally);
        $wall = (hrtime(true) - $t0) / 1e9;
        $answer = ['type' => 'bare', 'wall_s' => $wall, 'requests' => $tally->responses, 'errors' => $tally->errors];
        if ($tally->firstError !== null) {
            $answer['error'] = $tally->firstError;
        }
        send($answer);
    }

    /** close the calibration loop's client, if one is open */
    public function endBare(): void
    {
        if ($this->bareOpen) {
            $this->bareOpen = false;
            $this->close($this->bare);
        }
    }
}

/** answer the lab's messages on stdin until it closes it */
function main(Driver $driver): void
{
    // stdout carries protocol lines only: PHP's own output (echo, warnings) goes to stderr
    ini_set('display_errors', 'stderr');
    ob_start(static function (string $buffer): string {
        fwrite(STDERR, $buffer);
        return '';
    }, 1);
    $loop = new Loop($driver);
    while (($line = fgets(STDIN)) !== false) {
        if (trim($line) === '') continue;
        $msg = json_decode($line, true);
        $type = is_array($msg) ? ($msg['type'] ?? null) : null;
        if ($type === 'hello') {
            send(['type' => 'hello', 'protocol' => PROTOCOL, 'versions' => ['php' => PHP_VERSION] + $driver->versions()]);
        } elseif ($type === 'job') {
            $loop->onJob($msg);
        } elseif ($type === 'go') {
            $loop->onGo();
        } elseif ($type === 'bare') {
            $loop->onBare($msg);
        } else {
            send(['type' => 'error', 'message' => 'unknown message: ' . substr($line, 0, 200)]);
        }
    }
    $loop->endBare();
}
