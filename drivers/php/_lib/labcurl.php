<?php
// Shared by the PHP drivers built on the curl extension (php-curl, php-curl-multi): one request
// entry of a job turned into curl options on an easy handle, and the response read back.

declare(strict_types=1);

namespace Lab\Curl;

use Lab;

const HONOURED = ['tcp_nodelay' => null, 'expect_100' => null];

function versions(): array
{
    $v = curl_version();
    return ['php-curl' => phpversion('curl'), 'libcurl' => $v['version'], 'ssl' => $v['ssl_version']];
}

/**
 * Set $ch up for one request entry (after curl_reset). Returns the file handle of a file sink
 * (to close after the transfer) or null for a memory sink (CURLOPT_RETURNTRANSFER).
 * @return resource|null
 */
function setup(\CurlHandle $ch, array $job, array $req)
{
    $headers = [];
    foreach (($req['headers'] ?? []) as $name => $value) {
        $headers[] = "$name: $value";
    }
    $opts = [
        CURLOPT_URL => $req['url'],
        CURLOPT_HTTP_VERSION => ['1.1' => CURL_HTTP_VERSION_1_1, '2' => CURL_HTTP_VERSION_2TLS,
            'h2c' => CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE][$job['http']],
        CURLOPT_TIMEOUT_MS => (int)($job['timeout_s'] * 1000),
        CURLOPT_FOLLOWLOCATION => !empty($req['follow_redirects']),
        CURLOPT_MAXREDIRS => 20,
    ];
    if ($job['http'] === '2') {
        $opts[CURLOPT_PIPEWAIT] = true; // wait for a connection that can multiplex, rather than open more
    }
    if ($job['tls_ca'] !== null) {
        $opts[CURLOPT_CAINFO] = $job['tls_ca'];
    }
    if (!$job['keep_alive']) {
        $opts[CURLOPT_FORBID_REUSE] = true;
        $opts[CURLOPT_FRESH_CONNECT] = true;
    }
    if (!empty($job['cookies'])) {
        $opts[CURLOPT_COOKIEFILE] = ''; // the cookie engine, in memory
    }
    if (!empty($job['accept_gzip'])) {
        $opts[CURLOPT_ENCODING] = 'gzip';
    }
    if (($nodelay = Lab\option($job, 'tcp_nodelay')) !== null) {
        $opts[CURLOPT_TCP_NODELAY] = $nodelay;
    }
    $expect = Lab\option($job, 'expect_100');
    if ($expect === false) {
        $headers[] = 'Expect:';
    } elseif ($expect === true) {
        $headers[] = 'Expect: 100-continue';
    }
    $method = strtoupper($req['method']);
    if (isset($req['form'])) {
        $multipart = ($req['form_encoding'] ?? 'urlencoded') === 'multipart';
        $opts[CURLOPT_POSTFIELDS] = $multipart ? $req['form'] : Lab\urlencoded($req['form']);
        if ($method !== 'POST') {
            $opts[CURLOPT_CUSTOMREQUEST] = $method;
        }
    } elseif (!empty($req['body_file'])) {
        $opts[CURLOPT_UPLOAD] = true;
        $opts[CURLOPT_INFILE] = fopen($req['body_file'], 'rb');
        $opts[CURLOPT_INFILESIZE] = filesize($req['body_file']);
        $opts[CURLOPT_CUSTOMREQUEST] = $method;
        $headers[] = 'Content-Type: ' . ($req['content_type'] ?? 'application/octet-stream');
    } elseif ($method !== 'GET') {
        $opts[CURLOPT_CUSTOMREQUEST] = $method;
    }
    $opts[CURLOPT_HTTPHEADER] = $headers;
    $sink = null;
    if (($req['sink'] ?? 'memory') === 'file') {
        $sink = fopen($req['sink_path'], 'wb');
        $opts[CURLOPT_FILE] = $sink;
    } else {
        $opts[CURLOPT_RETURNTRANSFER] = true;
    }
    curl_setopt_array($ch, $opts);
    return $sink;
}

function http_label(\CurlHandle $ch): string
{
    return match (curl_getinfo($ch, CURLINFO_HTTP_VERSION)) {
        CURL_HTTP_VERSION_1_0 => '1.0',
        CURL_HTTP_VERSION_2_0 => '2',
        default => '1.1',
    };
}

/** after a transfer: the response into the report (or the error) and the sink closed */
function finish(\CurlHandle $ch, int $r, array $req, ?string $body, $sink, int $errno, string $error, Lab\Report $report): void
{
    if ($sink !== null) {
        fclose($sink);
    }
    if ($errno !== 0) {
        $report->fail($r, "curl error $errno: $error");
        return;
    }
    $status = (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
    $report->add($r, $status, http_label($ch), $sink === null ? $body : null, $sink === null ? null : $req['sink_path']);
}
