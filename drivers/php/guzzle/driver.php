<?php
// php-guzzle: Guzzle 7 (Debian's php-guzzlehttp-guzzle) on its default curl handler, one Client
// reused; a Pool with `concurrency` for parallel jobs.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require '/usr/share/php/GuzzleHttp/autoload.php';

use GuzzleHttp\Client;
use GuzzleHttp\Cookie\CookieJar;
use GuzzleHttp\Pool;
use GuzzleHttp\Psr7\Request;
use Psr\Http\Message\ResponseInterface;

final class GuzzleDriver extends Lab\Driver
{
    public array $options = ['tcp_nodelay' => null, 'expect_100' => null];
    private ?Client $client = null;

    public function versions(): array
    {
        return ['guzzle' => self::installed('php-guzzlehttp-guzzle'), 'libcurl' => curl_version()['version']];
    }

    /** a Debian package's version (Guzzle 7 has no version constant) */
    private static function installed(string $package): string
    {
        return trim((string)shell_exec('dpkg-query -W -f=\'${Version}\' ' . escapeshellarg($package) . ' 2>/dev/null')) ?: 'unknown';
    }

    public function refuse(array $job): ?string
    {
        return $job['http'] === 'h2c' ? "Guzzle's version 2.0 over http:// asks for an Upgrade, not prior knowledge (h2c)" : null;
    }

    public function open(array $job): void
    {
        $curl = [];
        if (($nodelay = Lab\option($job, 'tcp_nodelay')) !== null) {
            $curl[CURLOPT_TCP_NODELAY] = $nodelay;
        }
        $this->client = new Client([
            'http_errors' => false,
            'verify' => $job['tls_ca'] ?? true,
            'timeout' => (float)$job['timeout_s'],
            'version' => $job['http'] === '2' ? '2.0' : '1.1',
            'cookies' => empty($job['cookies']) ? false : new CookieJar(),
            'curl' => $curl,
        ]);
    }

    /** the request options for one entry of the job */
    private function options(array $job, array $req): array
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        if (!empty($job['accept_gzip'])) {
            $headers['Accept-Encoding'] = 'gzip';
        }
        $o = ['headers' => $headers, 'allow_redirects' => empty($req['follow_redirects']) ? false : ['max' => 20]];
        if (($expect = Lab\option($job, 'expect_100')) !== null) {
            $o['expect'] = $expect;
        }
        if (isset($req['form'])) {
            if (($req['form_encoding'] ?? 'urlencoded') === 'multipart') {
                $o['multipart'] = array_map(fn($k, $v) => ['name' => $k, 'contents' => $v], array_keys($req['form']), $req['form']);
            } else {
                $o['form_params'] = $req['form'];
            }
        } elseif (!empty($req['body_file'])) {
            $o['body'] = fopen($req['body_file'], 'rb');
            $o['headers']['Content-Type'] = $req['content_type'] ?? 'application/octet-stream';
        }
        if (($req['sink'] ?? 'memory') === 'file') {
            $o['sink'] = $req['sink_path'];
        }
        return $o;
    }

    private static function record(Lab\Report $report, int $r, array $req, ResponseInterface $response): void
    {
        $http = $response->getProtocolVersion() === '2.0' ? '2' : $response->getProtocolVersion();
        if (($req['sink'] ?? 'memory') === 'file') {
            $report->add($r, $response->getStatusCode(), $http, null, $req['sink_path']);
        } else {
            $report->add($r, $response->getStatusCode(), $http, (string)$response->getBody());
        }
    }

    public function run(array $job, Lab\Report $report): void
    {
        if ($job['concurrency'] <= 1) {
            foreach (Lab\work($job) as [$r, $req]) {
                try {
                    self::record($report, $r, $req, $this->client->request($req['method'], $req['url'], $this->options($job, $req)));
                } catch (\Throwable $e) {
                    $report->fail($r, get_class($e) . ': ' . $e->getMessage());
                }
            }
            return;
        }
        $entries = iterator_to_array(Lab\work($job), false);
        $calls = function () use ($entries, $job) {
            foreach ($entries as [$r, $req]) {
                yield fn() => $this->client->requestAsync($req['method'], $req['url'], $this->options($job, $req));
            }
        };
        $pool = new Pool($this->client, $calls(), [
            'concurrency' => $job['concurrency'],
            'fulfilled' => fn(ResponseInterface $resp, int $i) => self::record($report, $entries[$i][0], $entries[$i][1], $resp),
            'rejected' => fn($reason, int $i) => $report->fail($entries[$i][0], $reason instanceof \Throwable ? $reason->getMessage() : (string)$reason),
        ]);
        $pool->promise()->wait();
    }

    public function close(): void
    {
        $this->client = null;
    }
}

Lab\main(new GuzzleDriver(), __DIR__);
