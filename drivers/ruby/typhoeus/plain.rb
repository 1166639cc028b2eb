# frozen_string_literal: true

# Typhoeus' plain loop (docs/driver-protocol.md §9): Typhoeus.get(url) in a loop, each body as
# response.body, as its README shows it; its pooled easy handle keeps the connection. close:
# forbid_reuse and fresh_connect, libcurl's own options for a new connection per transfer (as the
# driver does).
# usage: plain.rb URL COUNT keep-alive|close WARMUP_S

require "typhoeus"

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

options = close ? { forbid_reuse: true, fresh_connect: true } : {}

# one GET: the body's length
get = lambda do
  response = Typhoeus.get(url, options)
  raise "#{response.return_code}: #{response.return_message}" unless response.return_code == :ok
  raise "status #{response.code}" unless response.code == 200

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
