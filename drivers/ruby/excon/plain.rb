# frozen_string_literal: true

# Excon's plain loop (docs/driver-protocol.md §9): one Excon connection, connection.get in a
# loop, each body as response.body, as its README shows them. keep-alive: persistent: true, its
# documented switch to keep the socket; close: Excon's default (persistent false), which closes
# the socket after every response (as the driver does).
# usage: plain.rb URL COUNT keep-alive|close WARMUP_S

require "excon"

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

connection = Excon.new(url, persistent: !close)

# one GET: the body's length
get = lambda do
  response = connection.get
  raise "status #{response.status}" unless response.status == 200

  response.body.bytesize
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
