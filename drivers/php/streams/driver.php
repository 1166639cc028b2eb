<?php
// php-streams: file_get_contents / fopen on PHP's http:// wrapper with a stream context. The
// wrapper sends "Connection: close": every request is a new connection, whatever the job asks.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';

final class StreamsDriver extends Lab\Driver
{
    public function versions(): array
    {
        return ['openssl' => OPENSSL_VERSION_TEXT];
    }

    public function open(array $job): void
    {
    }

    private function context(array $job, array $req)
    {
        $headers = [];
        foreach (($req['headers'] ?? []) as $name => $value) {
            $headers[] = "$name: $value";
        }
        $http = ['method' => strtoupper($req['method']), 'protocol_version' => 1.1, 'ignore_errors' => true,
            'timeout' => (float)$job['timeout_s'], 'follow_location' => empty($req['follow_redirects']) ? 0 : 1,
            'max_redirects' => 20];
        if (isset($req['form'])) {
            if (($req['form_encoding'] ?? 'urlencoded') === 'multipart') {
                [$type, $http['content']] = Lab\multipart($req['form']);
            } else {
                [$type, $http['content']] = ['application/x-www-form-urlencoded', Lab\urlencoded($req['form'])];
            }
            $headers[] = "Content-Type: $type";
        } elseif (!empty($req['body_file'])) {
            $http['content'] = file_get_contents($req['body_file']); // the wrapper takes a string only
            $headers[] = 'Content-Type: ' . ($req['content_type'] ?? 'application/octet-stream');
        }
        $http['header'] = $headers;
        $ssl = ['verify_peer' => true, 'verify_peer_name' => true];
        if ($job['tls_ca'] !== null) {
            $ssl['cafile'] = $job['tls_ca'];
        }
        return stream_context_create(['http' => $http, 'ssl' => $ssl]);
    }

    /** the final response's status line among the headers of every hop */
    private static function status(array $headers): array
    {
        $line = 'HTTP/1.1 0';
        foreach ($headers as $h) {
            if (str_starts_with($h, 'HTTP/')) $line = $h;
        }
        return [(int)explode(' ', $line)[1], Lab\status_line_version($line)];
    }

    public function run(array $job, Lab\Report $report): void
    {
        foreach (Lab\work($job) as [$r, $req]) {
            $ctx = $this->context($job, $req);
            if (($req['sink'] ?? 'memory') === 'file') {
                $in = @fopen($req['url'], 'rb', false, $ctx);
                if ($in === false) {
                    $report->fail($r, error_get_last()['message'] ?? 'fopen failed');
                    continue;
                }
                $out = fopen($req['sink_path'], 'wb');
                stream_copy_to_stream($in, $out);
                fclose($out);
                [$status, $http] = self::status(stream_get_meta_data($in)['wrapper_data'] ?? []);
                fclose($in);
                $report->add($r, $status, $http, null, $req['sink_path']);
                continue;
            }
            $body = @file_get_contents($req['url'], false, $ctx);
            if ($body === false) {
                $report->fail($r, error_get_last()['message'] ?? 'file_get_contents failed');
                continue;
            }
            [$status, $http] = self::status($http_response_header ?? []);
            $report->add($r, $status, $http, $body);
        }
    }

    public function close(): void
    {
    }
}

Lab\main(new StreamsDriver(), __DIR__);
