<?php
// php-streams: file_get_contents / fopen on PHP's http:// wrapper with a stream context per
// request. The wrapper has no connection pool and sends "Connection: close": every request is a
// new connection. keep_alive=false is exactly what it always does; keepalive is not claimed, so
// the lab answers keep-alive cells unsupported.

declare(strict_types=1);

require __DIR__ . '/../_lib/labdriver.php';

final class StreamsDriver extends Lab\Driver
{
    // the wrapper sends a body at once, never with Expect: 100-continue
    // accept_encoding "library": the http stream wrapper asks for no coding and decodes nothing,
    // as every job does already
    public array $options = ['expect_100' => [false], 'accept_encoding' => Lab\LIBRARY_ENCODING];

    public function versions(): array
    {
        return ['openssl' => OPENSSL_VERSION_TEXT];
    }

    /** nothing to build: the wrapper keeps no client state between calls */
    public function prepare(array $job): mixed
    {
        if ($job['http'] !== '1.1') { // not claimed; said here for a run by hand
            return new Lab\Unsupported("PHP's http wrapper speaks HTTP/1.0 and 1.1 only");
        }
        return true;
    }

    private function context(array $job, array $req)
    {
        $headers = [];
        foreach (($req['headers'] ?? []) as $name => $value) {
            $headers[] = "$name: $value";
        }
        $http = ['method' => strtoupper($req['method']), 'protocol_version' => 1.1, 'ignore_errors' => true];
        if ($job['timeout_s'] !== null) { // else default_socket_timeout, as for any stream
            $http['timeout'] = (float)$job['timeout_s'];
        }
        if (Lab\follow_redirects($req) === false) {
            $http['follow_location'] = 0; // true or absent: the wrapper's default, which follows (up to 20)
        }
        if (isset($req['form'])) {
            if (Lab\is_multipart($req)) {
                [$type, $http['content']] = self::multipart($req['form']);
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

    /** a multipart/form-data body of plain fields (the wrapper takes a raw body): [content type, body] */
    private static function multipart(array $form): array
    {
        $boundary = 'clientlab-' . bin2hex(random_bytes(12));
        $body = '';
        foreach ($form as $name => $value) {
            $name = str_replace(['"', "\r", "\n"], ['%22', '%0D', '%0A'], (string)$name);
            $body .= "--$boundary\r\nContent-Disposition: form-data; name=\"$name\"\r\n\r\n$value\r\n";
        }
        return ["multipart/form-data; boundary=$boundary", $body . "--$boundary--\r\n"];
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

    public function run(array $job, mixed $state, Lab\Collector $report): void
    {
        foreach (Lab\work($job) as [$r, $req]) {
            $ctx = $this->context($job, $req);
            error_clear_last();
            if (Lab\to_file($req)) {
                $in = @fopen($req['url'], 'rb', false, $ctx);
                if ($in === false) {
                    $report->fail($r, error_get_last()['message'] ?? 'fopen failed');
                    continue;
                }
                $out = fopen($req['sink_path'], 'wb');
                $copied = @stream_copy_to_stream($in, $out);
                $meta = stream_get_meta_data($in);
                fclose($out);
                fclose($in);
                if ($copied === false || $meta['timed_out'] || error_get_last() !== null) {
                    $report->fail($r, $meta['timed_out'] ? 'timed out' : (error_get_last()['message'] ?? 'read failed'));
                    continue;
                }
                [$status, $http] = self::status($meta['wrapper_data'] ?? []);
                $report->addFile($r, $status, $http, $req['sink_path']);
                continue;
            }
            $body = @file_get_contents($req['url'], false, $ctx);
            if ($body === false || error_get_last() !== null) { // a read that failed half-way warns
                $report->fail($r, error_get_last()['message'] ?? 'file_get_contents failed');
                continue;
            }
            [$status, $http] = self::status($http_response_header ?? []);
            $report->add($r, $status, $http, $body);
        }
    }
}

Lab\main(new StreamsDriver());
