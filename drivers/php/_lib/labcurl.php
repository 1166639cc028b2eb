<?php
// labcurl: what the PHP drivers on the curl extension share (php-curl, php-curl-multi). A handle
// gets the job's settings once (job_options) and an entry's options when it starts a request of
// another entry than its last (configure), without curl_reset: every per-entry option is set
// again, as a program reusing one handle does; a transfer with files of its own (an upload body,
// a file sink) gets them (attach) and closes them (finish); respond() reads the response back
// into the report.

declare(strict_types=1);

namespace Lab\Curl;

use Lab;

/**
 * the job options both curl drivers honour (any valid value); accept_encoding "library": libcurl
 * sends no Accept-Encoding and decodes nothing unless CURLOPT_ENCODING is set, as a job without
 * accept_gzip does already
 */
const HONOURED = ['tcp_nodelay' => null, 'expect_100' => null, 'accept_encoding' => \Lab\LIBRARY_ENCODING];

function versions(): array
{
    $v = curl_version();
    return ['php-curl' => (string)phpversion('curl'), 'libcurl' => $v['version'], 'ssl' => (string)$v['ssl_version'],
        'zlib' => (string)$v['libz_version']];
}

/** libcurl older than 8.0.0 fails prior knowledge on a reused h2c connection (curl#10634) */
function h2c_reuse_bug(): bool
{
    return curl_version()['version_number'] < 0x080000;
}

/** the job's HTTP version as CURLOPT_HTTP_VERSION, or an Unsupported when libcurl lacks HTTP/2 */
function http_version(array $job): int|Lab\Unsupported
{
    if ($job['http'] !== '1.1' && !(curl_version()['features'] & CURL_VERSION_HTTP2)) {
        return new Lab\Unsupported('this libcurl is built without HTTP/2');
    }
    return match ($job['http']) {
        '2' => CURL_HTTP_VERSION_2TLS, // h2 via ALPN on https; a server that declines shows as "1.1"
        'h2c' => CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE,
        default => CURL_HTTP_VERSION_1_1,
    };
}

/** options that hold for every request of the job, set once on a handle */
function job_options(array $job, int $httpVersion): array
{
    $opts = [
        CURLOPT_HTTP_VERSION => $httpVersion,
    ];
    if ($job['timeout_s'] !== null) { // else libcurl's own (no limit on a transfer)
        $opts[CURLOPT_TIMEOUT_MS] = (int)round($job['timeout_s'] * 1000);
    }
    if ($job['tls_ca'] !== null) {
        $opts[CURLOPT_CAINFO] = $job['tls_ca']; // verification stays on (the default)
    }
    if (!empty($job['cookies'])) {
        $opts[CURLOPT_COOKIEFILE] = ''; // "" turns on the in-memory cookie engine, no file read
    }
    if (!empty($job['accept_gzip'])) {
        $opts[CURLOPT_ENCODING] = 'gzip';
    }
    if (!$job['keep_alive']) {
        $opts[CURLOPT_FORBID_REUSE] = true; // close the connection after each transfer
    }
    if (($nodelay = Lab\option($job, 'tcp_nodelay')) !== null) {
        $opts[CURLOPT_TCP_NODELAY] = $nodelay;
    }
    return $opts;
}

/** what one transfer holds open until it ends: the file sink and the upload body */
final class Transfer
{
    /** @param resource|null $sink @param resource|null $upload */
    public function __construct(public int $r, public array $req, public $sink, public $upload)
    {
    }
}

/**
 * Set one request entry's options on $ch (after job_options): everything but the transfer's own
 * files. The handle keeps them for every repeat of the entry, as a program reusing one handle for
 * the same request sets nothing again; attach() then gives each transfer its files. Returns null,
 * or why the handle refused an option.
 */
function configure(\CurlHandle $ch, array $job, array $req): ?string
{
    $method = strtoupper($req['method']);
    $headers = [];
    foreach (($req['headers'] ?? []) as $name => $value) {
        $headers[] = $value === '' ? "$name;" : "$name: $value"; // "name;" sends an empty value
    }
    // back to a plain GET first (no upload, no HEAD, no custom method left from the last entry,
    // libcurl's default of not following redirects), then this entry's own options: two calls,
    // as the order matters
    $plain = [CURLOPT_NOBODY => false, CURLOPT_UPLOAD => false, CURLOPT_HTTPGET => true, CURLOPT_CUSTOMREQUEST => null,
        CURLOPT_FOLLOWLOCATION => false];
    $opts = [CURLOPT_URL => $req['url']];
    if (Lab\follow_redirects($req)) {
        $opts[CURLOPT_FOLLOWLOCATION] = true;
    }
    $natural = $method === 'GET';
    $upload = false;
    if (isset($req['form'])) {
        // an array is sent as multipart/form-data (curl_mime), a string urlencoded
        $opts[CURLOPT_POSTFIELDS] = Lab\is_multipart($req) ? $req['form'] : Lab\urlencoded($req['form']);
        $natural = $method === 'POST';
    } elseif (!empty($req['body_file'])) {
        // streamed from the file (opened by attach) by the extension's read callback; another
        // method than PUT is sent as a custom request on the upload
        $upload = true;
        $opts[CURLOPT_UPLOAD] = true;
        $opts[CURLOPT_INFILESIZE] = (int)@filesize($req['body_file']);
        $natural = $method === 'PUT';
        $headers[] = 'Content-Type: ' . ($req['content_type'] ?? 'application/octet-stream');
    } elseif ($method === 'HEAD') {
        $opts[CURLOPT_NOBODY] = true;
        $natural = true;
    }
    if (!$natural) {
        $opts[CURLOPT_CUSTOMREQUEST] = $method;
    }
    $expect = Lab\option($job, 'expect_100');
    if ((isset($req['form']) || $upload) && $expect !== null) {
        $headers[] = $expect ? 'Expect: 100-continue' : 'Expect:'; // "Expect:" removes libcurl's own
    }
    $opts[CURLOPT_HTTPHEADER] = $headers;
    if (!Lab\to_file($req)) {
        $opts[CURLOPT_RETURNTRANSFER] = true; // the body as curl_exec's / curl_multi_getcontent's string
    }
    if (!curl_setopt_array($ch, $plain) || !curl_setopt_array($ch, $opts)) {
        return 'curl_setopt_array refused an option: ' . curl_error($ch);
    }
    return null;
}

/** whether an entry's transfers have files of their own (attach): an upload body or a file sink */
function files(array $req): bool
{
    return !empty($req['body_file']) || Lab\to_file($req);
}

/**
 * One transfer of an entry configure() set on $ch: its upload's file and its sink file, opened
 * anew, where it has them. Returns the Transfer, or a string saying why it cannot start.
 */
function attach(\CurlHandle $ch, int $r, array $req): Transfer|string
{
    $upload = $sink = null;
    if (!empty($req['body_file'])) {
        if (($upload = @fopen($req['body_file'], 'rb')) === false) {
            return "cannot read body_file {$req['body_file']}";
        }
        if (!curl_setopt($ch, CURLOPT_INFILE, $upload)) {
            fclose($upload);
            return 'curl_setopt refused CURLOPT_INFILE: ' . curl_error($ch);
        }
    }
    if (Lab\to_file($req)) {
        if (($sink = @fopen($req['sink_path'], 'wb')) === false || !curl_setopt($ch, CURLOPT_FILE, $sink)) {
            close($sink ?: null, $upload);
            return "cannot open sink_path {$req['sink_path']}";
        }
    }
    return new Transfer($r, $req, $sink, $upload);
}

/** @param resource|null ...$files */
function close(...$files): void
{
    foreach ($files as $f) {
        if (is_resource($f)) fclose($f);
    }
}

/** CURLINFO_HTTP_VERSION's answers as the report says them (any other: '?') */
const HTTP_LABELS = [CURL_HTTP_VERSION_1_0 => '1.0', CURL_HTTP_VERSION_1_1 => '1.1', CURL_HTTP_VERSION_2_0 => '2'];

/** the HTTP version of the last transfer, as the report says it */
function http_label(\CurlHandle $ch): string
{
    return HTTP_LABELS[curl_getinfo($ch, CURLINFO_HTTP_VERSION)] ?? '?';
}

/**
 * after a transfer without files of its own: its response (the body as curl_exec returned it) or
 * its error into the report
 */
function respond(\CurlHandle $ch, int $r, int $errno, ?string $body, Lab\Collector $report): void
{
    if ($errno !== 0) {
        $detail = curl_error($ch);
        $report->fail($r, curl_strerror($errno) . ($detail !== '' ? ": $detail" : ''));
        return;
    }
    // http_label's look-up written out: one PHP call less on every request
    $report->add($r, (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
        HTTP_LABELS[curl_getinfo($ch, CURLINFO_HTTP_VERSION)] ?? '?', (string)$body);
}

/** after a transfer attach() started: its files closed, the response (or the error) into the report */
function finish(\CurlHandle $ch, Transfer $t, int $errno, ?string $body, Lab\Collector $report): void
{
    $sinkClosed = $t->sink === null || fclose($t->sink);
    close($t->upload);
    if ($errno === 0 && !$sinkClosed) {
        $errno = CURLE_WRITE_ERROR;
    }
    if ($errno !== 0 || $t->sink === null) {
        respond($ch, $t->r, $errno, $body, $report);
    } else {
        $report->addFile($t->r, (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE), http_label($ch), $t->req['sink_path']);
    }
}
