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
require "multipart_post"
require "net/http/persistent"
require "socket"
require "zlib"

class FaradayDriver < LabDriver::Driver
  # TCP_NODELAY through Net::HTTP::Persistent#socket_options (it sets 1 by default, Net::HTTP
  # itself sets 1 on connect: false is applied right after the connection opens, before any
  # request is written). Neither Faraday nor Net::HTTP sends Expect: 100-continue by itself.
  # accept_encoding "library": no header of Faraday's; Net::HTTP underneath asks for gzip,
  # deflate and identity and decodes them, as a Faraday user on this adapter gets
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => [false], "accept_encoding" => LabDriver::LIBRARY_ENCODING }.freeze
  OPTION_NOTES = {
    "expect_100" => "this driver sends no Expect header",
    "max_host_connections" => "Faraday 1.1's net_http_persistent adapter sets no per-host limit",
  }.freeze
  NODELAY = [Socket::IPPROTO_TCP, Socket::TCP_NODELAY].freeze

  # Faraday 1.1 ships its adapters itself (net_http_persistent among them); multipart-post is
  # its multipart encoder, connection_pool holds Net::HTTP::Persistent's connections,
  # domain_name matches cookie domains for http-cookie, Ruby's zlib inflates for Gzip
  def versions
    LabDriver.base_versions.merge(
      "faraday" => Faraday::VERSION, "faraday-adapter" => "net_http_persistent (faraday #{Faraday::VERSION})",
      "faraday_middleware" => FaradayMiddleware::VERSION, "multipart-post" => MultipartPost::VERSION,
      "net-http-persistent" => Net::HTTP::Persistent::VERSION, "connection_pool" => ConnectionPool::VERSION,
      "net-http" => Net::HTTP::VERSION, "faraday-cookie_jar" => Faraday::CookieJarVersion::VERSION,
      "http-cookie" => HTTP::Cookie::VERSION, "domain_name" => DomainName::VERSION,
      "zlib" => Zlib.zlib_version
    )
  end

  def refuse(job)
    name = job.multipart_name_matching(/["\r\n]/) or return nil

    "multipart-post (Faraday's multipart encoder) writes field names unescaped: #{name.inspect} would break its part's header"
  end

  def open(job)
    @job = job
    @jar = job.cookies ? HTTP::CookieJar.new : nil # one cookie store for the whole job
    @persistent = {} # follows redirects? => the adapter's Net::HTTP::Persistent
    # follows redirects? => Faraday::Connection, its middleware stack built now (no connection
    # yet); a plain stack reports a 3xx as it is, so only following needs a stack of its own
    @connections = {}
    job.requests.map(&:follow?).uniq.each { |follow| connection(follow).app }
  end

  def request(req)
    conn = connection(req.follow?)
    headers = req.upload_headers
    # a plain-field form goes multipart when the request says so (Faraday's multipart
    # middleware adds the boundary); a Hash body without it is urlencoded
    headers = { "Content-Type" => "multipart/form-data" }.merge(headers) if req.multipart?
    req.open_body do |file|
      resp = conn.run_request(req.method.downcase.to_sym, req.url, file || req.form, headers)
      http = @persistent[req.follow?]&.http_version(resp.env.url) || "?"
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
      request: @job.timeout_s ? { timeout: @job.timeout_s, open_timeout: @job.timeout_s, write_timeout: @job.timeout_s } : {},
      headers: default_headers,
    ) do |f|
      f.request :multipart
      f.request :url_encoded
      f.use FaradayMiddleware::FollowRedirects if follow # its own redirect limit
      f.use :cookie_jar, jar: @jar if @jar
      f.use FaradayMiddleware::Gzip if @job.accept_gzip # asks for gzip and decodes it
      f.adapter(:net_http_persistent) { |http| configure(follow, http) }
    end
  end

  def default_headers
    # exactly what the job asks for: Gzip would ask for "gzip,deflate" and Net::HTTP for its own
    # list (decoding behind Faraday's back); Gzip keeps a header it is given and decodes gzip
    headers = @job.encoding_headers
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

LabDriver.main(FaradayDriver.new) if $PROGRAM_NAME == __FILE__
