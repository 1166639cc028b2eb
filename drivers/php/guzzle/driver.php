<?php
// php-guzzle: Guzzle 7 (Debian's php-guzzlehttp-guzzle) on its default curl handler, one Client
// reused for the job; sequential jobs call request(), parallel ones run a Pool of `concurrency`.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require '/usr/share/php/GuzzleHttp/autoload.php';

use GuzzleHttp\Client;
use GuzzleHttp\Cookie\CookieJar;
use GuzzleHttp\Pool;
use Psr\Http\Message\ResponseInterface;

final class GuzzleDriver extends Lab\Driver
{
    // accept_encoding "library": Guzzle names no Accept-Encoding of its own (decode_content keeps
    // curl from sending one), as a job without accept_gzip does already
    public array $options = ['tcp_nodelay' => null, 'expect_100' => null, 'accept_encoding' => Lab\LIBRARY_ENCODING];

    public function versions(): array
    {
        // Guzzle 7 has no full version constant (ClientInterface::MAJOR_VERSION only)
        return ['guzzle' => Lab\debian_version('php-guzzlehttp-guzzle'), 'libcurl' => curl_version()['version']];
    }

    public function prepare(array $job): mixed
    {
        if ($job['http'] === 'h2c') { // not claimed; said here for a run by hand
            return new Lab\Unsupported("Guzzle's version 2.0 over http:// asks for an Upgrade, not prior knowledge (h2c)");
        }
        if (($why = Lab\close_refusal($job, 'Guzzle')) !== null) {
            return new Lab\Unsupported($why);
        }
        $curl = [];
        if (($nodelay = Lab\option($job, 'tcp_nodelay')) !== null) {
            $curl[CURLOPT_TCP_NODELAY] = $nodelay;
        }
        return new Client([
            'http_errors' => false,
            'verify' => $job['tls_ca'] ?? true,
            ...($job['timeout_s'] !== null ? ['timeout' => (float)$job['timeout_s']] : []), // else the library's own
            'version' => $job['http'] === '2' ? '2.0' : '1.1', // 2.0: CURL_HTTP_VERSION_2_0, h2 by ALPN on https
            'cookies' => empty($job['cookies']) ? false : new CookieJar(),
            'curl' => $curl,
        ]);
    }

    /** the request options for one entry of the job */
    private static function options(array $job, array $req): array
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        if (!empty($job['accept_gzip'])) {
            $headers['Accept-Encoding'] = 'gzip'; // decode_content (default on) then decodes it
        }
        $o = ['headers' => $headers];
        if (($follow = Lab\follow_redirects($req)) !== null) {
            $o['allow_redirects'] = $follow; // true: Guzzle's own redirect settings
        }
        if (($expect = Lab\option($job, 'expect_100')) !== null) {
            $o['expect'] = $expect;
        }
        if (isset($req['form'])) {
            if (Lab\is_multipart($req)) {
                $o['multipart'] = array_map(fn($k, $v) => ['name' => (string)$k, 'contents' => (string)$v],
                    array_keys($req['form']), array_values($req['form']));
            } else {
                $o['form_params'] = $req['form'];
            }
        } elseif (!empty($req['body_file'])) {
            $o['body'] = fopen($req['body_file'], 'rb'); // streamed by curl's read callback
            $o['headers']['Content-Type'] = $req['content_type'] ?? 'application/octet-stream';
        }
        if (Lab\to_file($req)) {
            $o['sink'] = $req['sink_path'];
        }
        return $o;
    }

    private static function record(Lab\Collector $report, int $r, array $req, ResponseInterface $response): void
    {
        $http = $response->getProtocolVersion() === '2.0' ? '2' : $response->getProtocolVersion();
        if (Lab\to_file($req)) {
            $response->getBody()->close(); // flush and close the sink file
            $report->addFile($r, $response->getStatusCode(), $http, $req['sink_path']);
        } else {
            $report->add($r, $response->getStatusCode(), $http, (string)$response->getBody());
        }
    }

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        /** @var Client $client */
        $client = $state;
        if ($job['concurrency'] <= 1) {
            foreach (Lab\work($job) as [$r, $req]) {
                try {
                    self::record($report, $r, $req, $client->request($req['method'], $req['url'], self::options($job, $req)));
                } catch (\Throwable $e) {
                    $report->failWith($r, $e);
                }
            }
            return;
        }
        $entries = iterator_to_array(Lab\work($job), false);
        $calls = function () use ($entries, $job, $client) {
            foreach ($entries as [$r, $req]) {
                yield fn() => $client->requestAsync($req['method'], $req['url'], self::options($job, $req));
            }
        };
        $pool = new Pool($client, $calls(), [
            'concurrency' => $job['concurrency'],
            'fulfilled' => fn(ResponseInterface $resp, int $i) => self::record($report, $entries[$i][0], $entries[$i][1], $resp),
            'rejected' => fn($reason, int $i) => $reason instanceof \Throwable ? $report->failWith($entries[$i][0], $reason)
                : $report->fail($entries[$i][0], (string)$reason),
        ]);
        $pool->promise()->wait();
    }
}

Lab\main(new GuzzleDriver());
