<?php
// php-curl-multi: curl_multi_exec + curl_multi_select with up to `concurrency` transfers in flight
// on a pool of reused easy handles; optionally a curl_share handle (DNS, TLS sessions,
// connections), CURLMOPT_MAX_HOST_CONNECTIONS, and HTTP/2 multiplexing.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require __DIR__ . '/../_lib/labcurl.php';

const SHARE_LOCKS = ['dns' => CURL_LOCK_DATA_DNS, 'tls' => CURL_LOCK_DATA_SSL_SESSION,
    'connections' => CURL_LOCK_DATA_CONNECT];

final class CurlMultiDriver extends Lab\Driver
{
    // PHP's curl extension has no curl_multi_socket_action: only the multi API is there
    public array $options = Lab\Curl\HONOURED + ['max_host_connections' => null, 'share' => null, 'multi_api' => ['multi']];
    private ?CurlMultiHandle $multi = null;
    private ?CurlShareHandle $share = null;
    private array $idle = [];

    public function versions(): array
    {
        return Lab\Curl\versions();
    }

    public function refuse(array $job): ?string
    {
        foreach ((Lab\option($job, 'share') ?? []) as $what) {
            if (!isset(SHARE_LOCKS[$what])) {
                return "option share: unknown data '$what' (dns, tls, connections)";
            }
        }
        return null;
    }

    public function open(array $job): void
    {
        $this->multi = curl_multi_init();
        if (($max = Lab\option($job, 'max_host_connections')) !== null) {
            curl_multi_setopt($this->multi, CURLMOPT_MAX_HOST_CONNECTIONS, $max);
        }
        curl_multi_setopt($this->multi, CURLMOPT_PIPELINING, $job['http'] === '1.1' ? CURLPIPE_NOTHING : CURLPIPE_MULTIPLEX);
        $shared = Lab\option($job, 'share') ?? [];
        if ($shared || !empty($job['cookies'])) {
            $this->share = curl_share_init();
            foreach ($shared as $what) {
                curl_share_setopt($this->share, CURLSHOPT_SHARE, SHARE_LOCKS[$what]);
            }
            if (!empty($job['cookies'])) { // one cookie store for the job, whichever handle runs a request
                curl_share_setopt($this->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_COOKIE);
            }
        }
        for ($i = 0; $i < max(1, (int)$job['concurrency']); $i++) {
            $this->idle[] = curl_init();
        }
    }

    public function run(array $job, Lab\Report $report): void
    {
        $pending = Lab\work($job);
        $running = []; // spl_object_id(handle) => [handle, r, req, sink]
        $start = function () use ($pending, &$running, $job): void {
            while ($this->idle && $pending->valid()) {
                [$r, $req] = $pending->current();
                $pending->next();
                $ch = array_pop($this->idle);
                curl_reset($ch);
                $sink = Lab\Curl\setup($ch, $job, $req);
                if ($this->share !== null) {
                    curl_setopt($ch, CURLOPT_SHARE, $this->share);
                }
                curl_multi_add_handle($this->multi, $ch);
                $running[spl_object_id($ch)] = [$ch, $r, $req, $sink];
            }
        };
        $start();
        while ($running) {
            $status = curl_multi_exec($this->multi, $active);
            if ($status !== CURLM_OK) {
                throw new RuntimeException('curl_multi_exec: ' . curl_multi_strerror($status));
            }
            while (($info = curl_multi_info_read($this->multi)) !== false) {
                $ch = $info['handle'];
                [, $r, $req, $sink] = $running[spl_object_id($ch)];
                unset($running[spl_object_id($ch)]);
                $body = $sink === null ? curl_multi_getcontent($ch) : null;
                Lab\Curl\finish($ch, $r, $req, $body, $sink, $info['result'], curl_strerror($info['result']), $report);
                curl_multi_remove_handle($this->multi, $ch);
                $this->idle[] = $ch;
                $start();
            }
            if ($running && curl_multi_select($this->multi, 1.0) === -1) {
                usleep(1000); // no descriptor to wait on yet (curl's advice for -1)
            }
        }
    }

    public function close(): void
    {
        $this->idle = [];
        $this->multi = null;
        $this->share = null;
    }
}

Lab\main(new CurlMultiDriver(), __DIR__);
