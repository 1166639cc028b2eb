# frozen_string_literal: true

# clientlab driver: Faraday on its net_http_persistent adapter (Net::HTTP::Persistent keeps the
# connection), with faraday_middleware's FollowRedirects and Gzip and faraday-cookie_jar.

require_relative "../_lib/labdriver"
require "faraday"
require "faraday_middleware"
require "faraday_middleware/version"
require "faraday-cookie_jar"
require "faraday/cookie_jar/version"
require "http-cookie"
require "net/http/persistent"
require "socket"

class FaradayDriver < LabDriver::Driver
  # TCP_NODELAY through Net::HTTP::Persistent#socket_options (it sets 1 by default, Net::HTTP
  # itself sets 1 on connect: false is applied right after the connection opens, before any
  # request is written). Neither Faraday nor Net::HTTP sends Expect: 100-continue by itself.
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => [false] }.freeze
  OPTION_NOTES = {
    "expect_100" => "this driver sends no Expect header",
    "max_host_connections" => "Faraday 1.1's net_http_persistent adapter sets no per-host limit",
  }.freeze
  MAX_REDIRECTS = 20
  NODELAY = [Socket::IPPROTO_TCP, Socket::TCP_NODELAY].freeze

  def versions
    LabDriver.base_versions.merge(
      "faraday" => Faraday::VERSION, "faraday_middleware" => FaradayMiddleware::VERSION,
      "faraday-cookie_jar" => Faraday::CookieJarVersion::VERSION,
      "net-http-persistent" => Net::HTTP::Persistent::VERSION, "net-http" => Net::HTTP::VERSION,
      "http-cookie" => HTTP::Cookie::VERSION
    )
  end

  def open(job)
    @job = job
    @jar = job.cookies ? HTTP::CookieJar.new : nil # one cookie store for the whole job
    @persistent = {} # follow_redirects => the adapter's Net::HTTP::Persistent
    # follow_redirects => Faraday::Connection, its middleware stack built now (no connection yet)
    @connections = {}
    job.requests.map(&:follow_redirects).uniq.each { |follow| connection(follow).app }
  end

  def request(req)
    conn = connection(req.follow_redirects)
    headers = req.upload_headers
    # a plain-field form goes multipart when the request says so (Faraday's multipart
    # middleware adds the boundary); a Hash body without it is urlencoded
    headers = { "Content-Type" => "multipart/form-data" }.merge(headers) if req.multipart?
    req.open_body do |file|
      resp = conn.run_request(req.method.downcase.to_sym, req.url, file || req.form, headers)
      http = @persistent[req.follow_redirects]&.http_version(resp.env.url) || "?"
      LabDriver::Response.of(resp.status, http, resp.body, @job.verify)
    end
  end

  def close
    @connections&.each_value(&:close)
    @persistent&.each_value(&:shutdown) # Faraday 1.1's adapter#close leaves the pool open
    @connections = @persistent = nil
  end

  private

  def connection(follow)
    @connections[follow] ||= Faraday.new(
      ssl: { verify: true, ca_file: @job.tls_ca },
      request: { timeout: @job.timeout_s, open_timeout: @job.timeout_s, write_timeout: @job.timeout_s },
      headers: default_headers,
    ) do |f|
      f.request :multipart
      f.request :url_encoded
      f.use FaradayMiddleware::FollowRedirects, limit: MAX_REDIRECTS if follow
      f.use :cookie_jar, jar: @jar if @jar
      f.use FaradayMiddleware::Gzip if @job.accept_gzip # asks for gzip and decodes it
      f.adapter(:net_http_persistent) { |http| configure(follow, http) }
    end
  end

  def default_headers
    headers = {}
    # Net::HTTP would ask for gzip itself otherwise (and decode it behind Faraday's back)
    headers["Accept-Encoding"] = "identity" unless @job.accept_gzip
    headers["Connection"] = "close" unless @job.keep_alive # Net::HTTP::Persistent closes after it
    headers
  end

  # The adapter's block gets the Net::HTTP::Persistent before every request; set it up once.
  def configure(follow, http)
    return if @persistent[follow]

    @persistent[follow] = http
    nodelay = @job.option("tcp_nodelay")
    return if nodelay.nil?

    http.socket_options.reject! { |option| option[0, 2] == NODELAY }
    http.socket_options << [*NODELAY, nodelay ? 1 : 0]
  end
end

LabDriver.main(FaradayDriver.new, __FILE__) if $PROGRAM_NAME == __FILE__
