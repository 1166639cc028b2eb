# frozen_string_literal: true

# http.rb's plain loop (docs/driver-protocol.md §9): keep-alive is HTTP.persistent(origin), its
# documented persistent client; close is HTTP itself, which sends Connection: close and opens a
# connection per request (as the driver does). client.get(url).to_s reads each body whole, as
# its README shows.
# usage: plain.rb URL COUNT keep-alive|close WARMUP_S

require "http"

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

client = close ? HTTP : HTTP.persistent(HTTP::URI.parse(url).origin)

# one GET: the body's length
get = lambda do
  response = client.get(url)
  body = response.to_s
  raise "status #{response.code}" unless response.code == 200

  body.bytesize
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
