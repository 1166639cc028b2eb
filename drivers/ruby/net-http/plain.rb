# frozen_string_literal: true

# Net::HTTP's plain loop (docs/driver-protocol.md §9): Net::HTTP.start keeps one connection, and
# http.get(path) in a loop gives each body as res.body, as its docs show them. close: a
# Connection: close header on every request, after which Net::HTTP reconnects (as the driver does).
# usage: plain.rb URL COUNT keep-alive|close WARMUP_S

require "net/http"

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

uri = URI(url)
http = begin
  Net::HTTP.start(uri.host, uri.port) # connects here, as its users' programs do
rescue StandardError => e
  fail!("GET #{url}: #{e.class}: #{e.message}")
end
headers = close ? { "Connection" => "close" } : nil

# one GET: the body's length
get = lambda do
  res = http.get(uri.request_uri, headers)
  raise "status #{res.code}" unless res.code == "200"

  res.body.bytesize
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
