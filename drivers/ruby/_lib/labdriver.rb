# frozen_string_literal: true

# labdriver: the clientlab driver protocol (docs/driver-protocol.md) for Ruby drivers.
#
# A driver subclasses LabDriver::Driver, says which job options it honours (OPTIONS) and
# supplies three steps: `open(job)` builds the client (no connection), `request(req)` does
# one request and returns a LabDriver::Response, `close` closes the client. A parallel client
# overrides `run_all(job, report)` instead of `request`. `LabDriver.main` does the rest:
# hello / job / ready / go / done / report, refusing jobs with an option the driver does not
# honour (the lab itself never sends a job that needs a capability the driver's driver.toml does
# not claim), and the calibration loop (bare: the same requests on one kept client, timed by the
# driver's own clock).
#
# Standard library only (json, digest, securerandom, uri; openssl when a driver's client runs
# on Ruby's own OpenSSL). openssl is loaded only then: a client on another TLS stack (libcurl's)
# would otherwise carry its thousands of objects in every collection of its heap, which its
# plain loop does not.

require "digest"
require "json"
require "securerandom"
require "uri"

module LabDriver
  PROTOCOL = 1

  # Options known in protocol version 1 and the JSON type each value must have.
  OPTION_TYPES = {
    "tcp_nodelay" => :boolean,
    "max_host_connections" => :integer,
    "share" => :array,
    "expect_100" => :boolean,
    "multi_api" => :string,
    "accept_encoding" => :string,
  }.freeze

  # accept_encoding = "library": the job leaves Accept-Encoding and decoding to the library as it
  # ships (docs/driver-protocol.md §3); a driver that honours it lists it with these values.
  LIBRARY_ENCODING = ["library"].freeze

  # One entry of `job.requests`, done `repeat` times; `r` is its index.
  # `parsed_uri` and `parsed_origin` are the URL's parts, taken once when the job is read (nil
  # for a URL that does not parse: `uri` then raises at the request, which reports it), so that
  # a request does not parse its URL again each time it is repeated.
  Request = Struct.new(:r, :method, :url, :repeat, :headers, :form, :form_encoding, :body_file,
                       :content_type, :follow_redirects, :sink, :sink_path, :parsed_uri, :parsed_origin,
                       keyword_init: true) do
    # Build from the job's JSON entry; unknown keys are ignored (newer labs may add some).
    def self.parse(r, data)
      raise ArgumentError, "request #{r} is not an object" unless data.is_a?(Hash)

      form = data["form"]
      raise ArgumentError, "request #{r}: form is not an object" unless form.nil? || form.is_a?(Hash)

      url = String(data.fetch("url"))
      uri = begin
        URI.parse(url).freeze
      rescue URI::InvalidURIError
        nil
      end
      new(
        r: r,
        method: String(data.fetch("method")).upcase,
        url: url,
        parsed_uri: uri,
        parsed_origin: uri && "#{uri.scheme}://#{uri.host}:#{uri.port}".freeze,
        repeat: Integer(data.fetch("repeat", 1) || 1),
        headers: (data["headers"] || {}).to_h { |k, v| [k.to_s, v.to_s] },
        form: form&.to_h { |k, v| [k.to_s, v.to_s] },
        form_encoding: data["form_encoding"] || "urlencoded",
        body_file: data["body_file"],
        content_type: data["content_type"],
        # true: follow 3xx; false: report the 3xx; nil (absent): the URL does not redirect, so
        # the library's own redirect setting stays as it ships
        follow_redirects: data["follow_redirects"].nil? ? nil : (data["follow_redirects"] ? true : false),
        sink: data["sink"] || "memory",
        sink_path: data["sink_path"],
      ).freeze
    end

    # True when the job asks to follow this entry's redirects (false and absent alike: no).
    def follow?
      follow_redirects == true
    end

    # True when the job names a redirect setting for this entry (true or false); when absent the
    # driver sets nothing and the library's default stays.
    def redirects_named?
      !follow_redirects.nil?
    end

    # True when the form goes as multipart/form-data.
    def multipart?
      !form.nil? && form_encoding == "multipart"
    end

    # True when the form goes urlencoded.
    def urlencoded?
      !form.nil? && !multipart?
    end

    # True when the body is streamed to `sink_path`.
    def to_file?
      sink == "file"
    end

    # True when the request carries a body (form or file).
    def body?
      !form.nil? || !body_file.nil?
    end

    # Size of `body_file`, for an explicit Content-Length.
    def body_size
      body_file ? File.size(body_file) : 0
    end

    # `body_file` opened for streaming and closed afterwards; nil is yielded when there is none.
    def open_body
      return yield(nil) unless body_file

      File.open(body_file, "rb") { |f| yield f }
    end

    # The extra headers plus Content-Type for a raw `body_file` body, and its Content-Length
    # unless `length` is false (for clients that count the body themselves).
    def upload_headers(length: true)
      return headers unless body_file

      upload = { "Content-Type" => content_type || "application/octet-stream" }
      upload["Content-Length"] = body_size.to_s if length
      upload.merge(headers)
    end

    # The URL parsed (frozen: every repeat of the entry shares it).
    def uri
      parsed_uri || URI.parse(url)
    end

    # "scheme://host:port" of the URL (what a per-host client is keyed by).
    def origin
      parsed_origin || begin
        u = uri
        "#{u.scheme}://#{u.host}:#{u.port}"
      end
    end
  end

  # A job (docs/driver-protocol.md section 3) as typed fields.
  Job = Struct.new(:scenario, :verify, :http, :tls_ca, :concurrency, :keep_alive, :cookies,
                   :accept_gzip, :timeout_s, :options, :requests, keyword_init: true) do
    # Build from the `job` object of a job message.
    def self.parse(data)
      raise ArgumentError, "job is not an object" unless data.is_a?(Hash)

      requests = data["requests"] # the work itself: a job without it is malformed
      raise ArgumentError, "job must be an object with a requests list" unless requests.is_a?(Array)

      options = data["options"] || {}
      raise ArgumentError, "options is not an object" unless options.is_a?(Hash)

      new(
        scenario: data.fetch("scenario", "").to_s,
        verify: data.fetch("verify", false) ? true : false,
        http: data.fetch("http", "1.1").to_s,
        tls_ca: data["tls_ca"],
        concurrency: Integer(data.fetch("concurrency", 1) || 1),
        keep_alive: data.fetch("keep_alive", true) ? true : false,
        cookies: data.fetch("cookies", false) ? true : false,
        accept_gzip: data.fetch("accept_gzip", false) ? true : false,
        # nil: the job names no time limit, and the library keeps its own default
        timeout_s: data["timeout_s"].nil? ? nil : Float(data["timeout_s"]),
        options: options,
        requests: requests.each_with_index.map { |entry, r| Request.parse(r, entry) },
      ).freeze
    end

    # The option's value, nil when absent or null (the client's default).
    def option(name)
      options[name]
    end

    # Accept-Encoding value: gzip when asked, else identity (clients' defaults may say gzip).
    def gzip_header
      accept_gzip ? "gzip" : "identity"
    end

    # The job leaves Accept-Encoding and decoding to the library as it ships (the option
    # accept_encoding = "library"): the driver sets no Accept-Encoding of its own.
    def library_encoding?
      option("accept_encoding") == "library"
    end

    # { "Accept-Encoding" => gzip_header }, or {} where the job leaves it to the library.
    def encoding_headers
      library_encoding? ? {} : { "Accept-Encoding" => gzip_header }
    end

    # Every request to do, in order, repeats expanded.
    def each_work
      return enum_for(:each_work) unless block_given?

      requests.each { |req| req.repeat.times { yield req } }
    end

    # The distinct origins of the job's requests, in order: clients that keep one connection
    # per host build those clients up front (connecting only on their first request).
    def origins
      requests.map(&:origin).uniq
    end

    # The first multipart field name that matches `pattern`, or nil: for a library whose multipart
    # encoder cannot carry some characters in a name (its part's header would break).
    def multipart_name_matching(pattern)
      requests.each do |req|
        next unless req.multipart?

        req.form.each_key { |name| return name if name.match?(pattern) }
      end
      nil
    end

    # How many requests the job makes.
    def total
      requests.sum(&:repeat)
    end
  end

  # What one request got: final status, decoded body length, HTTP version, digest if verify.
  Response = Struct.new(:status, :bytes, :http, :sha256) do
    # A response whose whole (decoded) body is in memory.
    def self.of(status, http, body, verify)
      body ||= ""
      new(Integer(status), body.bytesize, LabDriver.http_label(http),
          verify ? Digest::SHA256.hexdigest(body) : nil)
    end
  end

  # Writes a streamed body to a file chunk by chunk, counting it (and hashing when verifying).
  class FileSink
    attr_reader :size

    # Open `path`, yield the sink to the block and close the file whatever happens.
    def self.open(path, verify)
      sink = new(path, verify)
      begin
        yield sink
      ensure
        sink.close
      end
    end

    def initialize(path, verify)
      @file = File.open(path, "wb")
      @size = 0
      @digest = verify ? Digest::SHA256.new : nil
    end

    # Append one chunk; returns its length.
    def write(chunk)
      @file.write(chunk)
      @size += chunk.bytesize
      @digest&.update(chunk)
      chunk.bytesize
    end
    alias << write

    # Close the file and describe what was written.
    def response(status, http)
      close
      Response.new(Integer(status), @size, LabDriver.http_label(http), @digest&.hexdigest)
    end

    # Close the file (idempotent).
    def close
      @file.close unless @file.closed?
    end
  end

  # One response, its body in memory or streamed to the entry's sink file: yields a FileSink
  # when the entry says sink "file" (else nil) to a block that does the request, writes the
  # body's chunks to that sink if there is one, and returns [status, http version, body]
  # (the body is not looked at when streamed).
  def self.response_for(req, verify)
    return Response.of(*yield(nil), verify) unless req.to_file?

    FileSink.open(req.sink_path, verify) do |sink|
      status, http, = yield(sink)
      sink.response(status, http)
    end
  end

  # What `run_all` writes each request's outcome into: a Report (timed trials) or a Tally (the
  # bare loop), so that both run the driver's one loop. An includer defines `add(req, resp)` for
  # a response and `fail(req, error)` for a request that got none.
  module Collector
    # The block's value, or nil when it raised: the exception becomes the request's error.
    def guard(req)
      yield
    rescue StandardError => e
      fail(req, e)
      nil
    end

    # Run the block as one request: its Response is recorded, an exception becomes an error.
    def record(req)
      add(req, yield)
    rescue StandardError => e # a failed request is reported, never fatal
      fail(req, e)
    end
  end

  # Collects responses and errors; `responses` gives them in the report's wire format.
  class Report
    include Collector
    attr_reader :errors

    def initialize(verify)
      @verify = verify
      # each response's entry index and Response as they came, one after the other: the wire
      # format is built only when the report is sent, after `done`, so the timed phase pays for
      # one push a response, as a plain loop keeps a count
      @got = []
      @errors = []
    end

    # Record one response.
    def add(req, resp)
      @got.push(req.r, resp)
    end

    # The responses in the report's wire format.
    def responses
      @got.each_slice(2).map do |r, resp|
        item = { "r" => r, "status" => resp.status, "bytes" => resp.bytes, "http" => resp.http }
        item["sha256"] = resp.sha256 if @verify
        item
      end
    end

    # Record one request that got no response.
    def fail(req, error)
      @errors << { "r" => req.r, "message" => LabDriver.describe(error)[0, 500] }
    end
  end

  # Counts responses and errors and keeps nothing else (but the first error's message): the
  # bare loop pays for no report that a plain program would not build.
  class Tally
    include Collector
    attr_reader :responses, :errors, :first_error

    def initialize
      @responses = 0
      @errors = 0
      @first_error = nil
    end

    # Count one response, whatever its status.
    def add(_req, _resp)
      @responses += 1
    end

    # Count one request that got no response.
    def fail(_req, error)
      @errors += 1
      @first_error ||= LabDriver.describe(error)[0, 500]
    end
  end

  module_function

  # Normalise a library's idea of the HTTP version to "1.0", "1.1" or "2".
  # Accepts "1.1", "HTTP/1.1", "HTTP/2", "2.0", 11, 20.
  def http_label(version)
    HTTP_LABELS[version] || begin # the version as most libraries give it ("1.1") is a key already
      text = version.to_s.upcase.delete_prefix("HTTP/")
      HTTP_LABELS.fetch(text, text)
    end
  end

  HTTP_LABELS = { "10" => "1.0", "11" => "1.1", "20" => "2", "2" => "2", "2.0" => "2", "1.0" => "1.0",
                  "1.1" => "1.1" }.freeze

  # "Class: message" of an exception (or the text itself), valid UTF-8 for the report.
  def describe(error)
    text = error.is_a?(Exception) ? error.message.to_s : error.to_s
    text = text.dup.force_encoding(Encoding::UTF_8).scrub("?").strip
    return text unless error.is_a?(Exception)

    text.empty? ? error.class.name : "#{error.class.name}: #{text}"
  end

  # application/x-www-form-urlencoded body of a form, fields in the job's order
  # (for clients that take a raw body).
  def urlencoded(form)
    URI.encode_www_form(form)
  end

  # `"`, CR and LF in a Content-Disposition parameter, percent-encoded as RFC 7578 (section 2)
  # and the HTML form encoder do
  DISPOSITION_ESCAPES = { '"' => "%22", "\r" => "%0D", "\n" => "%0A" }.freeze

  # A multipart/form-data body of plain fields built by hand: [content type, body]
  # (for clients that have no multipart encoder). Names are escaped for their quoted parameter;
  # values go as they are (a part's content is delimited by the boundary, not quoted).
  def multipart(form)
    boundary = "clientlab-#{SecureRandom.hex(12)}"
    body = +""
    form.each do |name, value|
      name = name.gsub(/["\r\n]/, DISPOSITION_ESCAPES)
      body << "--#{boundary}\r\nContent-Disposition: form-data; name=\"#{name}\"\r\n\r\n#{value}\r\n"
    end
    body << "--#{boundary}--\r\n"
    ["multipart/form-data; boundary=#{boundary}", body.b]
  end

  # A verifying TLS context trusting the job's CA (never disables verification).
  def ssl_context(job)
    require "openssl"
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.set_params(verify_mode: OpenSSL::SSL::VERIFY_PEER, verify_hostname: true)
    if job.tls_ca
      store = OpenSSL::X509::Store.new
      store.add_file(job.tls_ca)
      ctx.cert_store = store
    end
    ctx
  end

  # Versions every Ruby driver reports: the interpreter, and the OpenSSL its client runs on
  # unless `openssl: false` (a client on another TLS stack, which names its own).
  def base_versions(openssl: true)
    return { "ruby" => RUBY_VERSION } unless openssl

    require "openssl"
    { "ruby" => RUBY_VERSION, "openssl" => OpenSSL::OPENSSL_LIBRARY_VERSION,
      "ruby-openssl" => OpenSSL::VERSION }
  end

  # A synchronous driver: one client per job, requests one after another.
  #
  # Subclasses set OPTIONS and override `versions`, `open`, `request` and `close`; `refuse`
  # may add per-job refusals. OPTIONS maps each option the driver honours to the values it
  # honours exactly, or to nil for every valid value; any other non-null option is refused.
  class Driver
    OPTIONS = {}.freeze
    # option name => why the client cannot honour it (or its other values): added to the refusal
    OPTION_NOTES = {}.freeze

    # Library versions for the hello message.
    def versions
      LabDriver.base_versions
    end

    # A reason this driver cannot do `job` exactly, or nil.
    def refuse(_job)
      nil
    end

    # Build and configure the client. No connection may be opened here.
    def open(_job)
      raise NotImplementedError
    end

    # Do one request; raise on failure without a response (it becomes a report error).
    def request(_req)
      raise NotImplementedError
    end

    # Close the client and every connection it holds.
    def close; end

    # The timed phase: every request, in order, into `report`.
    def run_all(job, report)
      job.each_work { |req| report.record(req) { request(req) } }
    end
  end

  def json_type(value)
    case value
    when true, false then :boolean
    when Integer then :integer
    when Float then :number
    when String then :string
    when Array then :array
    when Hash then :object
    else :null
    end
  end

  # Why a job cannot be done exactly (an unhonoured option), or nil. Capabilities are the lab's
  # to check (driver.toml is their one declaration). `honoured` maps each option the driver
  # honours to the values it honours exactly, or to nil for every valid value; `notes` says per
  # option why the client cannot do more.
  def refusal(job, honoured, notes = {})
    job.options.sort.each do |name, value|
      next if value.nil?

      reason = option_refusal(name, value, honoured)
      next unless reason
      return notes[name] && !reason.include?(" must be a ") ? "#{reason}: #{notes[name]}" : reason
    end
    nil
  end

  def option_refusal(name, value, honoured)
    return "option #{name} is not supported" unless honoured.key?(name)

    kind = OPTION_TYPES[name]
    return "option #{name} must be a #{kind}, got #{JSON.generate(value)}" if kind && json_type(value) != kind

    allowed = honoured[name]
    return nil if allowed.nil? || allowed.include?(value)

    "option #{name}=#{JSON.generate(value)} cannot be honoured " \
      "(only #{allowed.map { |v| JSON.generate(v) }.join(', ')})"
  end

  # The protocol message loop for one driver, reading `input` and writing `out`.
  class Loop
    def initialize(driver, input, out)
      @driver = driver
      @input = input
      @out = out
      @job = nil # the job that is ready, waiting for go
      @bare = false # true while the bare loop's client is built and kept for the next round
    end

    # Write one protocol line.
    def send_message(message)
      @out.write(JSON.generate(message) + "\n")
      @out.flush
    end

    def on_job(data)
      @job = nil
      close_bare
      job = open_client(data) or return
      @job = job
      send_message({ "type" => "ready" })
    end

    def on_go
      job = @job
      @job = nil
      return send_message({ "type" => "error", "message" => "go without a ready job" }) unless job

      report = Report.new(job.verify)
      run_all(job, report)
      send_message({ "type" => "done" }) # before the report: serialising it is not timed
      send_message({ "type" => "report", "responses" => report.responses, "errors" => report.errors })
      close_client # no connection survives the job
    end

    # One round of the calibration loop: the job's requests on the kept client (built by the
    # first round, as a job message would build it), timed by the driver's own clock; nothing is
    # kept but counts. Later rounds bring their own job only for its URLs and sink paths.
    def on_bare(data)
      if @job # its client is open: a bare round would replace it behind the lab's back
        return send_message({ "type" => "error", "message" => "bare while a job is ready (go first)" })
      end

      if @bare
        job = parse_job(data) or return
      else
        job = open_client(data) or return
        @bare = true
      end
      tally = Tally.new
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      run_all(job, tally)
      wall_s = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      answer = { "type" => "bare", "wall_s" => wall_s, "requests" => tally.responses, "errors" => tally.errors }
      answer["error"] = tally.first_error if tally.first_error
      send_message(answer)
    end

    # Close the calibration loop's client, if one is kept.
    def close_bare
      return unless @bare

      @bare = false
      close_client
    end

    # Answer messages until end of input.
    def run
      @input.each_line do |line|
        next if line.strip.empty?

        begin
          message = JSON.parse(line)
          kind = message.fetch("type")
        rescue JSON::ParserError, KeyError, TypeError, NoMethodError
          send_message({ "type" => "error", "message" => "not a protocol message: #{line[0, 200].inspect}" })
          next
        end
        case kind
        when "hello"
          send_message({ "type" => "hello", "protocol" => PROTOCOL, "versions" => versions })
        when "job" then on_job(message["job"])
        when "go" then on_go
        when "bare" then on_bare(message["job"])
        else send_message({ "type" => "error", "message" => "unknown message type #{kind.inspect}" })
        end
      end
      close_bare
    end

    private

    # The job of a job or bare message, or nil after answering why it is not one.
    def parse_job(data)
      Job.parse(data)
    rescue KeyError, TypeError, ArgumentError => e
      send_message({ "type" => "error", "message" => "bad job: #{LabDriver.describe(e)}" })
      nil
    end

    # Parse a job and build the driver's client for it; nil after answering unsupported or error.
    def open_client(data)
      job = parse_job(data) or return
      driver_class = @driver.class
      reason = LabDriver.refusal(job, driver_class::OPTIONS, driver_class::OPTION_NOTES) ||
               @driver.refuse(job)
      if reason
        send_message({ "type" => "unsupported", "reason" => reason })
        return nil
      end
      begin
        @driver.open(job)
      rescue StandardError, ScriptError => e
        warn_exception(e)
        send_message({ "type" => "error", "message" => "building the client failed: #{LabDriver.describe(e)}" })
        return nil
      end
      job
    end

    # Every request of `job` into `collector` (a Report or a Tally): the timed phase's one loop.
    def run_all(job, collector)
      @driver.run_all(job, collector)
    rescue StandardError => e # run_all records per-request errors; this is the last resort
      warn_exception(e)
      collector.fail(job.requests.first || Request.new(r: 0), e)
    end

    def close_client
      @driver.close
    rescue StandardError => e
      warn_exception(e)
    end

    def versions
      @driver.versions.compact.to_h { |k, v| [k.to_s, v.to_s] }
    end

    def warn_exception(error)
      $stderr.puts("#{error.class}: #{error.message}", *Array(error.backtrace).first(20))
    end
  end

  # Run `driver` on stdin/stdout.
  def main(driver)
    # protocol lines go to a private copy of the real stdout; fd 1 itself (and $stdout) become
    # stderr, so a library's stray output or a child process cannot corrupt the protocol
    out = $stdout.dup
    out.binmode
    out.sync = true
    $stdout.reopen($stderr)
    $stdout = $stderr
    $stderr.sync = true
    $stdin.set_encoding(Encoding::UTF_8)
    Loop.new(driver, $stdin, out).run
  ensure
    out&.close
  end
end
