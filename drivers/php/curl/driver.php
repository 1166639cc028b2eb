<?php
// php-curl: the curl extension's easy interface, one handle reused for every request of a job
// (its connections, DNS cache, TLS sessions and cookies carry over), sequential. No curl_reset:
// the job's settings are set once, an entry's options before its first curl_exec (its repeats
// set only their own files, where they have any).

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require __DIR__ . '/../_lib/labcurl.php';

final class CurlClient
{
    /** h2c on libcurl < 8: prior knowledge for a new connection, plain HTTP/2 to reuse one */
    public bool $h2cFix = false;
    public bool $h2cLive = false; // the last transfer left an h2c connection to reuse

    public function __construct(public CurlHandle $ch)
    {
    }
}

final class CurlDriver extends Lab\Driver
{
    public array $options = Lab\Curl\HONOURED;

    /** work a test driver adds before each request (tests/testdrivers/planted-php); none here */
    public ?Closure $beforeEach = null;

    public function versions(): array
    {
        return Lab\Curl\versions();
    }

    public function prepare(array $job): mixed
    {
        $version = Lab\Curl\http_version($job);
        if ($version instanceof Lab\Unsupported) {
            return $version;
        }
        $client = new CurlClient(curl_init());
        // libcurl < 8.0.0 (Debian 12 has 7.88.1) fails a prior-knowledge request that reuses an h2c
        // connection ("Error in the HTTP2 framing layer", curl#10634)
        $client->h2cFix = $job['http'] === 'h2c' && $job['keep_alive'] && Lab\Curl\h2c_reuse_bug();
        if ($client->h2cFix) {
            foreach ($job['requests'] as $req) {
                if (!empty($req['follow_redirects'])) { // a redirect reuses the connection inside one transfer
                    return new Lab\Unsupported('libcurl ' . curl_version()['version']
                        . ' fails redirects over a kept-alive h2c connection (curl#10634, fixed in 8.0.0)');
                }
            }
        }
        if (!curl_setopt_array($client->ch, Lab\Curl\job_options($job, $version))) {
            return new Lab\Unsupported('the curl extension refused a job option: ' . curl_error($client->ch));
        }
        return $client;
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        $ch = $state->ch;
        // entry by entry: its options set once, then its repeats, each a curl_exec and its answer
        // read back (a transfer with files of its own also opens and closes them), as a program
        // repeating one request on one handle does
        foreach ($job['requests'] as $r => $req) {
            $n = (int)($req['repeat'] ?? 1);
            if (($why = Lab\Curl\configure($ch, $job, $req)) !== null) {
                for ($i = 0; $i < $n; $i++) {
                    $report->fail($r, $why);
                }
                continue;
            }
            $files = Lab\Curl\files($req);
            if (!$files && !$state->h2cFix) {
                // the common entry, written out: each repeat a curl_exec (its body a string: no
                // file sink) and its answer read back, nothing else a request (but a test
                // driver's planted work, so that it differs from this driver by that alone)
                $before = $this->beforeEach;
                for ($i = 0; $i < $n; $i++) {
                    if ($before !== null) {
                        $before();
                    }
                    $body = curl_exec($ch);
                    if ($body === false) {
                        Lab\Curl\respond($ch, $r, curl_errno($ch), null, $report);
                        continue;
                    }
                    $report->add($r, (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
                        Lab\Curl\HTTP_LABELS[curl_getinfo($ch, CURLINFO_HTTP_VERSION)] ?? '?', $body);
                }
                continue;
            }
            for ($i = 0; $i < $n; $i++) {
                $t = $files ? Lab\Curl\attach($ch, $r, $req) : null;
                if (is_string($t)) {
                    $report->fail($r, $t);
                    continue;
                }
                if ($state->h2cFix) {
                    curl_setopt($ch, CURLOPT_HTTP_VERSION,
                        $state->h2cLive ? CURL_HTTP_VERSION_2_0 : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
                }
                if ($this->beforeEach !== null) {
                    ($this->beforeEach)();
                }
                $body = curl_exec($ch);
                $errno = $body === false ? curl_errno($ch) : 0; // false exactly when the transfer failed
                if ($state->h2cFix) {
                    $state->h2cLive = $errno === 0 && curl_getinfo($ch, CURLINFO_HTTP_VERSION) === CURL_HTTP_VERSION_2_0;
                }
                $body = is_string($body) ? $body : null;
                if ($t === null) {
                    Lab\Curl\respond($ch, $r, $errno, $body, $report);
                } else {
                    Lab\Curl\finish($ch, $t, $errno, $body, $report);
                }
            }
        }
    }

    /**
     * h2cLive cannot be trusted across bare rounds (a new server port, or a connection the server
     * closed while the driver was paused): plain HTTP/2 on a new connection is an Upgrade, answered
     * in HTTP/1.1, and prior knowledge on a live h2c connection fails. A copy of the handle keeps
     * every option but no connection (nor the cookies received), so the round starts with prior
     * knowledge on a new connection.
     */
    public function resume(array $job, mixed $state): void
    {
        if ($state->h2cFix) {
            $state->ch = curl_copy_handle($state->ch);
            $state->h2cLive = false;
        }
    }

    public function finish(mixed $state): void
    {
        curl_close($state->ch); // a no-op since PHP 8: the handle (and its connections) go with the last reference
    }
}

if (get_included_files()[0] === __FILE__) { // run, not included by a test driver
    Lab\main(new CurlDriver());
}
