# frozen_string_literal: true

# Faraday's plain loop (docs/driver-protocol.md §9): one Faraday connection on its
# net_http_persistent adapter (Faraday's documented way to keep connections: its default
# adapter, net_http, opens one per request), conn.get in a loop, each body as resp.body.
# close: a Connection: close header on every request (as the driver does).
# usage: plain.rb URL COUNT keep-alive|close WARMUP_S

require "faraday"
require "net/http/persistent"

def fail!(message)
  warn "plain.rb: #{message}"
  exit 1
end

unless ARGV.size == 4 && ARGV[1].match?(/\A\d+\z/) && %w[keep-alive close].include?(ARGV[2]) &&
       ARGV[3].match?(/\A\d+(\.\d*)?\z/)
  fail!("usage: plain.rb URL COUNT keep-alive|close WARMUP_S")
end
url = ARGV[0]
count = Integer(ARGV[1])
close = ARGV[2] == "close"
warmup_s = Float(ARGV[3])

conn = Faraday.new(headers: close ? { "Connection" => "close" } : {}) do |f|
  f.adapter :net_http_persistent
end

# one GET: the body's length
get = lambda do
  resp = conn.get(url)
  raise "status #{resp.status}" unless resp.status == 200

  resp.body.bytesize
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

begin
  until_t = now + warmup_s
  get.call while now < until_t
  bytes = 0
  t0 = now
  count.times { bytes += get.call }
  seconds = now - t0
rescue StandardError => e
  fail!("GET #{url}: #{e.class}: #{e.message}")
end
puts format('{"requests": %d, "bytes": %d, "seconds": %.6f}', count, bytes, seconds)
