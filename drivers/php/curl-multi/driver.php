<?php
// php-curl-multi: curl_multi_exec + curl_multi_select with up to `concurrency` transfers in flight
// on a pool of reused easy handles (no curl_reset: a handle's entry options are set again when it
// takes a request of another entry than its last);
// optionally a curl_share handle (DNS, TLS sessions, connections), CURLMOPT_MAX_HOST_CONNECTIONS,
// and HTTP/2 multiplexing (CURLPIPE_MULTIPLEX, PIPEWAIT).

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require __DIR__ . '/../_lib/labcurl.php';

/** share option values => curl_share data */
const SHARE_LOCKS = ['dns' => 'CURL_LOCK_DATA_DNS', 'tls' => 'CURL_LOCK_DATA_SSL_SESSION',
    'connections' => 'CURL_LOCK_DATA_CONNECT'];

final class MultiClient
{
    /** @var CurlHandle[] easy handles not running a transfer */
    public array $idle = [];
    public ?CurlShareHandle $share = null; // kept alive as long as the handles that use it

    public function __construct(public CurlMultiHandle $multi)
    {
    }
}

final class CurlMultiDriver extends Lab\Driver
{
    public array $options = Lab\Curl\HONOURED + ['max_host_connections' => null, 'share' => null, 'multi_api' => null];

    public function versions(): array
    {
        return Lab\Curl\versions();
    }

    /** why the job's options cannot be honoured by this extension and libcurl, or null */
    private static function refuse(array $job): ?string
    {
        if (Lab\option($job, 'multi_api') === 'multi_socket') {
            return "PHP's curl extension has no curl_multi_socket_action: only the curl_multi_exec API (multi_api=multi)";
        }
        if (($api = Lab\option($job, 'multi_api')) !== null && $api !== 'multi') {
            return 'option multi_api: unknown API ' . json_encode($api) . ' (multi, multi_socket)';
        }
        if (($max = Lab\option($job, 'max_host_connections')) !== null && $max < 1) {
            return "option max_host_connections must be at least 1, got $max";
        }
        foreach ((Lab\option($job, 'share') ?? []) as $what) {
            if (!is_string($what) || !isset(SHARE_LOCKS[$what])) {
                return 'option share: unknown data ' . json_encode($what) . ' (dns, tls, connections)';
            }
            if (!defined(SHARE_LOCKS[$what])) {
                return 'option share=' . $what . ': PHP ' . PHP_VERSION . ' has no ' . SHARE_LOCKS[$what];
            }
        }
        if (!$job['keep_alive'] && $job['http'] !== '1.1' && $job['concurrency'] > 1) {
            return 'the transfers in flight share one multiplexed HTTP/2 connection: FORBID_REUSE closes it after them, not one connection per request';
        }
        if ($job['http'] === 'h2c' && Lab\Curl\h2c_reuse_bug()) { // not claimed; said here for a run by hand
            return 'libcurl ' . curl_version()['version'] . ' fails prior knowledge on a reused connection (curl#10634)';
        }
        return null;
    }

    public function prepare(array $job): mixed
    {
        if (($why = self::refuse($job)) !== null) {
            return new Lab\Unsupported($why);
        }
        $version = Lab\Curl\http_version($job);
        if ($version instanceof Lab\Unsupported) {
            return $version;
        }
        $client = new MultiClient(curl_multi_init());
        if (($max = Lab\option($job, 'max_host_connections')) !== null
            && !curl_multi_setopt($client->multi, CURLMOPT_MAX_HOST_CONNECTIONS, $max)) {
            return new Lab\Unsupported('libcurl refused CURLMOPT_MAX_HOST_CONNECTIONS');
        }
        curl_multi_setopt($client->multi, CURLMOPT_PIPELINING, $job['http'] === '1.1' ? CURLPIPE_NOTHING : CURLPIPE_MULTIPLEX);
        $shared = Lab\option($job, 'share') ?? [];
        if ($shared || !empty($job['cookies'])) {
            $client->share = curl_share_init();
            foreach ($shared as $what) {
                if (!curl_share_setopt($client->share, CURLSHOPT_SHARE, constant(SHARE_LOCKS[$what]))) {
                    return new Lab\Unsupported("libcurl cannot share $what (" . SHARE_LOCKS[$what] . '): '
                        . curl_share_strerror(curl_share_errno($client->share)));
                }
            }
            if (!empty($job['cookies'])) { // one cookie store for the job, whichever handle runs a request
                curl_share_setopt($client->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
            }
        }
        $opts = Lab\Curl\job_options($job, $version);
        if ($client->share !== null) {
            $opts[CURLOPT_SHARE] = $client->share;
        }
        if ($job['http'] !== '1.1') {
            $opts[CURLOPT_PIPEWAIT] = true; // wait for a connection that can multiplex, rather than open more
        }
        for ($i = 0; $i < max(1, (int)$job['concurrency']); $i++) {
            $ch = curl_init();
            if (!curl_setopt_array($ch, $opts)) {
                return new Lab\Unsupported('the curl extension refused a job option: ' . curl_error($ch));
            }
            $client->idle[] = $ch;
        }
        return $client;
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        $last = count($job['requests']) - 1;
        if (count($state->idle) !== 1) {
            $this->inFlight($job, $state, $report, 0, $last);
            return;
        }
        // One transfer at a time (concurrency 1): an entry without files of its own runs the loop
        // of the PHP manual's curl_multi_exec example, written out (add the handle, exec and
        // select until it is done, read its message and body, remove it), as a program making one
        // request after another on the multi interface does, and its answer goes straight into
        // the report: the general loop's bookkeeping of the handles in flight (an id, two maps
        // and a count a request) is PHP that one transfer at a time does not need, and on a small
        // answer it was the larger part of the driver's own CPU. An entry with files takes the
        // general loop.
        $multi = $state->multi;
        $ch = reset($state->idle); // the one handle
        foreach ($job['requests'] as $r => $req) {
            if (Lab\Curl\files($req)) {
                $this->inFlight($job, $state, $report, $r, $r);
                continue;
            }
            $n = (int)($req['repeat'] ?? 1);
            if (($why = Lab\Curl\configure($ch, $job, $req)) !== null) {
                for ($i = 0; $i < $n; $i++) {
                    $report->fail($r, $why);
                }
                continue;
            }
            for ($i = 0; $i < $n; $i++) {
                curl_multi_add_handle($multi, $ch);
                do {
                    $status = curl_multi_exec($multi, $active);
                    if ($active) {
                        // the manual's wait, its answer unread: the extension's curl_multi_select is
                        // libcurl's curl_multi_wait, which waits out its timeout when there is no
                        // descriptor yet and answers -1 only for an error, which the next
                        // curl_multi_exec reports
                        curl_multi_select($multi);
                    }
                } while ($active && $status === CURLM_OK);
                $info = curl_multi_info_read($multi);
                $body = curl_multi_getcontent($ch);
                curl_multi_remove_handle($multi, $ch);
                if ($status !== CURLM_OK) {
                    throw new RuntimeException('curl_multi_exec: ' . curl_multi_strerror($status));
                }
                if ($info === false) {
                    $report->fail($r, 'curl_multi_info_read: no message for a finished transfer');
                } elseif ($info['result'] === CURLE_OK) {
                    $report->add($r, (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
                        Lab\Curl\HTTP_LABELS[curl_getinfo($ch, CURLINFO_HTTP_VERSION)] ?? '?', (string)$body);
                } else {
                    Lab\Curl\respond($ch, $r, $info['result'], null, $report);
                }
            }
        }
    }

    /**
     * Entries $from to $to, their transfers as many at a time as there are handles. The loop a
     * curl_multi program runs: start a transfer on every idle handle, then curl_multi_exec, read
     * the finished transfers, curl_multi_select while none finished. Written out for the common
     * transfer (no files of its own, its body a string): a generator, a closure and a Transfer
     * object a request cost the sequential job about 5 µs of PHP a request over the library's
     * plain loop (docs/evidence/truth.md).
     */
    private function inFlight(array $job, MultiClient $state, Lab\Collector $report, int $from, int $to): void
    {
        $multi = $state->multi;
        $entries = $job['requests'];
        $r = $from - 1; // the entry whose repeats are being started
        $left = 0; // how many of them are still to start
        $req = [];
        $files = false; // whether the entry's transfers have files of their own (attach)
        $running = []; // spl_object_id(handle) => the entry's index, or its Transfer (files)
        $configured = []; // spl_object_id(handle) => the entry whose options it holds
        for (;;) {
            while ($state->idle) { // every idle handle takes the next request
                if ($left === 0) {
                    if ($r >= $to) {
                        break;
                    }
                    $req = $entries[++$r];
                    $left = (int)($req['repeat'] ?? 1);
                    $files = Lab\Curl\files($req);
                    continue;
                }
                $left--;
                $ch = array_pop($state->idle);
                $id = spl_object_id($ch);
                if (($configured[$id] ?? null) !== $r) {
                    unset($configured[$id]);
                    if (($why = Lab\Curl\configure($ch, $job, $req)) !== null) {
                        $report->fail($r, $why);
                        $state->idle[] = $ch;
                        continue;
                    }
                    $configured[$id] = $r;
                }
                if ($files) {
                    $t = Lab\Curl\attach($ch, $r, $req);
                    if (is_string($t)) {
                        $report->fail($r, $t);
                        $state->idle[] = $ch;
                        continue;
                    }
                    $running[$id] = $t;
                } else {
                    $running[$id] = $r;
                }
                curl_multi_add_handle($multi, $ch);
            }
            if (!$running) {
                return;
            }
            $status = curl_multi_exec($multi, $active);
            if ($status !== CURLM_OK) {
                throw new RuntimeException('curl_multi_exec: ' . curl_multi_strerror($status));
            }
            // libcurl counts a finished transfer out of $active and queues its message: there
            // are as many messages as transfers that left the count
            $finished = count($running) - $active;
            if ($finished <= 0) {
                if ($active && curl_multi_select($multi, 1.0) === -1) {
                    usleep(1000); // select failed (no descriptor yet): libcurl's advice is a short sleep
                }
                continue;
            }
            while ($finished-- > 0 && ($info = curl_multi_info_read($multi)) !== false) {
                if ($info['msg'] !== CURLMSG_DONE) continue;
                $ch = $info['handle'];
                $id = spl_object_id($ch);
                $t = $running[$id];
                unset($running[$id]);
                if (!is_int($t)) {
                    Lab\Curl\finish($ch, $t, $info['result'], $t->sink === null ? curl_multi_getcontent($ch) : null, $report);
                } elseif ($info['result'] === CURLE_OK) { // respond()'s answer written out: no call a request
                    $report->add($t, (int)curl_getinfo($ch, CURLINFO_RESPONSE_CODE),
                        Lab\Curl\HTTP_LABELS[curl_getinfo($ch, CURLINFO_HTTP_VERSION)] ?? '?',
                        (string)curl_multi_getcontent($ch));
                } else {
                    Lab\Curl\respond($ch, $t, $info['result'], null, $report);
                }
                curl_multi_remove_handle($multi, $ch);
                $state->idle[] = $ch; // it takes the next request at the loop's top
            }
        }
    }

    public function finish(mixed $state): void
    {
        $state->idle = []; // the easy handles go; the multi handle's connection cache with the state
    }
}

Lab\main(new CurlMultiDriver());
