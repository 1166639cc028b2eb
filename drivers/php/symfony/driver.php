<?php
// php-symfony: Symfony HttpClient 5.4 (Debian), HttpClient::create() (CurlHttpClient), one client
// reused; parallel jobs keep `concurrency` responses open and drain them with stream().

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';
require '/usr/share/php/Symfony/Component/HttpClient/autoload.php';

use Symfony\Component\HttpClient\HttpClient;
use Symfony\Contracts\HttpClient\HttpClientInterface;
use Symfony\Contracts\HttpClient\ResponseInterface;

final class SymfonyDriver extends Lab\Driver
{
    public array $options = ['max_host_connections' => null];
    private ?HttpClientInterface $client = null;

    public function versions(): array
    {
        $v = trim((string)shell_exec("dpkg-query -W -f='\${Version}' php-symfony-http-client 2>/dev/null")) ?: 'unknown';
        return ['symfony-http-client' => $v, 'libcurl' => curl_version()['version']];
    }

    public function open(array $job): void
    {
        $defaults = ['timeout' => (float)$job['timeout_s'], 'http_version' => $job['http'] === '1.1' ? '1.1' : '2.0'];
        if ($job['tls_ca'] !== null) {
            $defaults['cafile'] = $job['tls_ca'];
        }
        $this->client = HttpClient::create($defaults, Lab\option($job, 'max_host_connections') ?? 6);
    }

    private function start(array $job, array $req): ResponseInterface
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        $o = ['headers' => $headers, 'max_redirects' => empty($req['follow_redirects']) ? 0 : 20,
            'buffer' => ($req['sink'] ?? 'memory') !== 'file'];
        if (isset($req['form'])) {
            $o['body'] = $req['form']; // an array is sent urlencoded
        } elseif (!empty($req['body_file'])) {
            $o['body'] = fopen($req['body_file'], 'rb');
            $o['headers']['Content-Type'] = $req['content_type'] ?? 'application/octet-stream';
        }
        return $this->client->request($req['method'], $req['url'], $o);
    }

    /** wait for one response (draining it to its file sink) and record it */
    private function record(Lab\Report $report, int $r, array $req, ResponseInterface $response): void
    {
        try {
            if (($req['sink'] ?? 'memory') === 'file') {
                $out = fopen($req['sink_path'], 'wb');
                foreach ($this->client->stream($response) as $chunk) {
                    fwrite($out, $chunk->getContent());
                }
                fclose($out);
                $report->add($r, $response->getStatusCode(), self::version($response), null, $req['sink_path']);
            } else {
                $body = $response->getContent(false);
                $report->add($r, $response->getStatusCode(), self::version($response), $body);
            }
        } catch (\Throwable $e) {
            $report->fail($r, get_class($e) . ': ' . $e->getMessage());
        }
    }

    /** CurlHttpClient's http_version info is libcurl's CURL_HTTP_VERSION_* code */
    private static function version(ResponseInterface $response): string
    {
        return match ($response->getInfo('http_version')) {
            CURL_HTTP_VERSION_1_0 => '1.0',
            CURL_HTTP_VERSION_2_0 => '2',
            default => '1.1',
        };
    }

    public function run(array $job, Lab\Report $report): void
    {
        $entries = Lab\work($job);
        $open = new SplObjectStorage(); // response => [r, req]
        $fill = function () use ($entries, $open, $job): void {
            while (count($open) < max(1, $job['concurrency']) && $entries->valid()) {
                [$r, $req] = $entries->current();
                $entries->next();
                $open[$this->start($job, $req)] = [$r, $req];
            }
        };
        $fill();
        while (count($open) > 0) {
            if ($job['concurrency'] <= 1) {
                $open->rewind();
                $response = $open->current();
            } else { // the first response to finish
                $response = null;
                foreach ($this->client->stream(iterator_to_array($this->responses($open), false)) as $resp => $chunk) {
                    if ($chunk->isLast()) {
                        $response = $resp;
                        break;
                    }
                }
            }
            [$r, $req] = $open[$response];
            $open->detach($response);
            $this->record($report, $r, $req, $response);
            $fill();
        }
    }

    private function responses(SplObjectStorage $open): Generator
    {
        foreach ($open as $response) {
            yield $response;
        }
    }

    public function close(): void
    {
        $this->client = null;
    }
}

Lab\main(new SymfonyDriver(), __DIR__);
