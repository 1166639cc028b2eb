<?php
// labdriver: the clientlab driver protocol (docs/driver-protocol.md) for PHP drivers.
//
// A driver extends Lab\Driver: it names the options it honours and supplies open(job) (build
// the client, no connection), run(job, report) (the timed phase) and close(). Lab\main() does
// hello / job / ready / go / done / report and refuses jobs that need a capability its
// driver.toml does not claim or an option it does not honour. Standard extensions only.

declare(strict_types=1);

namespace Lab;

const PROTOCOL = 1;
// options known in protocol version 1, with the type each value must have
const OPTION_TYPES = ['tcp_nodelay' => 'boolean', 'max_host_connections' => 'integer', 'share' => 'array',
    'expect_100' => 'boolean', 'multi_api' => 'string'];

abstract class Driver
{
    /** option name => list of allowed values, or null for any value of the right type */
    public array $options = [];

    /** the client library and what lies under it, e.g. ['guzzle' => '7.4.5'] */
    abstract public function versions(): array;

    /** why this job cannot be done exactly as asked (beyond capabilities and options), or null */
    public function refuse(array $job): ?string
    {
        return null;
    }

    abstract public function open(array $job): void;

    abstract public function run(array $job, Report $report): void;

    abstract public function close(): void;
}

final class Report
{
    public array $responses = [];
    public array $errors = [];

    public function __construct(private bool $verify)
    {
    }

    /** one response; $body is the whole body (memory sink) or null with $file (file sink) */
    public function add(int $r, int $status, string $http, ?string $body, ?string $file = null): void
    {
        $item = ['r' => $r, 'status' => $status, 'http' => $http];
        if ($file !== null) {
            clearstatcache(true, $file);
            $item['bytes'] = is_file($file) ? filesize($file) : 0;
            if ($this->verify) {
                $item['sha256'] = is_file($file) ? hash_file('sha256', $file) : hash('sha256', '');
            }
        } else {
            $item['bytes'] = strlen($body ?? '');
            if ($this->verify) {
                $item['sha256'] = hash('sha256', $body ?? '');
            }
        }
        $this->responses[] = $item;
    }

    public function fail(int $r, string $message): void
    {
        $this->errors[] = ['r' => $r, 'message' => $message];
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

/** the capabilities a job needs (the lab's rule, clientlab/job.py) */
function required_capabilities(array $job): array
{
    $need = [];
    foreach ($job['requests'] as $req) {
        if (str_starts_with($req['url'], 'https:')) $need['tls'] = 1;
        if (!empty($req['follow_redirects'])) $need['redirects'] = 1;
        if (isset($req['form'])) $need[($req['form_encoding'] ?? 'urlencoded') === 'multipart' ? 'multipart' : 'form'] = 1;
        if (!empty($req['body_file'])) $need['upload'] = 1;
        if (($req['sink'] ?? 'memory') === 'file') $need['sink_file'] = 1;
    }
    $flags = ['http2' => $job['http'] === '2', 'h2c' => $job['http'] === 'h2c', 'cookies' => !empty($job['cookies']),
        'gzip' => !empty($job['accept_gzip']), 'parallel' => ($job['concurrency'] ?? 1) > 1,
        'keepalive_off' => !($job['keep_alive'] ?? true)];
    foreach ($flags as $cap => $on) {
        if ($on) $need[$cap] = 1;
    }
    return array_keys($need);
}

function refusal(array $job, array $capabilities, array $honoured): ?string
{
    $missing = array_diff(required_capabilities($job), $capabilities);
    if ($missing) {
        sort($missing);
        return 'needs capabilities not claimed: ' . implode(', ', $missing);
    }
    foreach (($job['options'] ?? []) as $name => $value) {
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

/** the `capabilities` list of a driver.toml (a flat TOML array of strings) */
function manifest_capabilities(string $manifest): array
{
    if (!preg_match('/^capabilities\s*=\s*\[(.*?)\]/ms', (string)file_get_contents($manifest), $m)) {
        throw new \RuntimeException("$manifest: no capabilities list");
    }
    preg_match_all('/"([a-z0-9_]+)"/', $m[1], $names);
    return $names[1];
}

/** urlencoded form body, fields in the job's order */
function urlencoded(array $form): string
{
    return http_build_query($form, '', '&', PHP_QUERY_RFC1738);
}

function send(array $message): void
{
    fwrite(STDOUT, json_encode($message, JSON_UNESCAPED_SLASHES) . "\n");
    fflush(STDOUT);
}

function log(string $line): void
{
    fwrite(STDERR, $line . "\n");
}

function main(Driver $driver, string $folder): void
{
    $capabilities = manifest_capabilities($folder . '/driver.toml');
    $job = null;
    while (($line = fgets(STDIN)) !== false) {
        if (trim($line) === '') continue;
        $msg = json_decode($line, true);
        $type = is_array($msg) ? ($msg['type'] ?? '') : '';
        if ($type === 'hello') {
            send(['type' => 'hello', 'protocol' => PROTOCOL, 'versions' => ['php' => PHP_VERSION] + $driver->versions()]);
        } elseif ($type === 'job') {
            $job = null;
            $candidate = $msg['job'];
            $reason = refusal($candidate, $capabilities, $driver->options) ?? $driver->refuse($candidate);
            if ($reason !== null) {
                send(['type' => 'unsupported', 'reason' => $reason]);
                continue;
            }
            try {
                $driver->open($candidate);
            } catch (\Throwable $e) {
                log((string)$e);
                send(['type' => 'error', 'message' => 'building the client failed: ' . get_class($e) . ': ' . $e->getMessage()]);
                continue;
            }
            $job = $candidate;
            send(['type' => 'ready']);
        } elseif ($type === 'go') {
            if ($job === null) {
                send(['type' => 'error', 'message' => 'go without a ready job']);
                continue;
            }
            $report = new Report((bool)$job['verify']);
            try {
                $driver->run($job, $report);
            } catch (\Throwable $e) {
                log((string)$e);
                $report->fail(0, get_class($e) . ': ' . $e->getMessage());
            }
            send(['type' => 'done']); // before the report: serialising it is not timed
            send(['type' => 'report', 'responses' => $report->responses, 'errors' => $report->errors]);
            $driver->close();
            $job = null;
        } else {
            send(['type' => 'error', 'message' => 'unknown message: ' . substr($line, 0, 200)]);
        }
    }
}

/** a multipart/form-data body of plain fields, for clients that take a raw body: [content type, body] */
function multipart(array $form): array
{
    $boundary = 'clientlab-' . bin2hex(random_bytes(12));
    $body = '';
    foreach ($form as $name => $value) {
        $body .= "--$boundary\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n$value\r\n";
    }
    return ["multipart/form-data; boundary=$boundary", $body . "--$boundary--\r\n"];
}

/** the HTTP version of a status line ("HTTP/1.1 200 OK" => "1.1", "HTTP/2 200" => "2") */
function status_line_version(string $line): string
{
    return preg_match('#^HTTP/(\d(?:\.\d)?)#', $line, $m) ? ($m[1] === '2.0' ? '2' : $m[1]) : '1.1';
}
