<?php
// php-pecl-http: pecl_http 4 (Debian php-http, on php-raphf), one http\Client("curl") reused for
// every request, sequential; bodies as strings.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';

final class PeclHttpDriver extends Lab\Driver
{
    private ?http\Client $client = null;

    public function versions(): array
    {
        return ['pecl_http' => phpversion('http'), 'libcurl' => http\Client\Curl\Versions\CURL];
    }

    public function refuse(array $job): ?string
    {
        foreach ($job['requests'] as $req) {
            if (($req['sink'] ?? 'memory') === 'file') {
                return 'pecl_http keeps the response body in memory (no streaming to a file)';
            }
        }
        return null;
    }

    public function open(array $job): void
    {
        $this->client = new http\Client('curl');
        $this->client->setOptions(['timeout' => (float)$job['timeout_s'],
            'protocol' => http\Client\Curl\HTTP_VERSION_1_1]);
    }

    private static function request(array $job, array $req): http\Client\Request
    {
        $headers = $req['headers'] ?? [];
        if (!$job['keep_alive']) {
            $headers['Connection'] = 'close';
        }
        $request = new http\Client\Request(strtoupper($req['method']), $req['url'], $headers);
        if (isset($req['form'])) {
            $body = new http\Message\Body();
            if (($req['form_encoding'] ?? 'urlencoded') === 'multipart') {
                $body->addForm($req['form']);
                $request->setContentType('multipart/form-data; boundary=' . $body->getBoundary());
            } else {
                $body->append(Lab\urlencoded($req['form']));
                $request->setContentType('application/x-www-form-urlencoded');
            }
            $request->setBody($body);
        } elseif (!empty($req['body_file'])) {
            $request->setBody(new http\Message\Body(fopen($req['body_file'], 'rb')));
            $request->setContentType($req['content_type'] ?? 'application/octet-stream');
        }
        $request->setOptions(['redirect' => empty($req['follow_redirects']) ? 0 : 20]);
        return $request;
    }

    public function run(array $job, Lab\Report $report): void
    {
        foreach (Lab\work($job) as [$r, $req]) {
            $request = self::request($job, $req);
            try {
                $this->client->enqueue($request)->send();
                $response = $this->client->getResponse($request);
                $http = $response->getHttpVersion() === '2.0' ? '2' : $response->getHttpVersion();
                $report->add($r, $response->getResponseCode(), $http, $response->getBody()->toString());
            } catch (\Throwable $e) {
                $report->fail($r, $e->getMessage());
            } finally {
                $this->client->dequeue($request);
            }
        }
    }

    public function close(): void
    {
        $this->client = null;
    }
}

Lab\main(new PeclHttpDriver(), __DIR__);
