# The golden transcript (drivers/contract/transcript.json) through the helper's message loop, with
# the transcript's contract client behind LabDriver::Driver. Run: ruby drivers/ruby/_lib/test/transcript_test.rb
# (exit status 0 when every case passed).

require "json"
require "stringio"
require_relative "../labdriver"

# The transcript's `client`.
class ContractClient < LabDriver::Driver
  OPTIONS = { "tcp_nodelay" => nil, "expect_100" => [false] }.freeze

  def versions
    LabDriver.base_versions.merge("contract" => "1")
  end

  def refuse(job)
    "the contract client refuses this job" if job.scenario == "refused-by-client"
  end

  def open(job)
    raise IOError, "the contract client cannot be built" if job.scenario == "open-fails"

    @verify = job.verify
  end

  def request(req)
    raise IOError, "connection refused" if req.url.include?("/fail")

    status = req.url[%r{/status/(\d{3})}, 1]
    LabDriver::Response.of(status ? Integer(status) : 200, "1.1", req.url, @verify)
  end
end

# The transcript's comparison: equal JSON, where a <...> string in `want` is a pattern.
def matches(want, got)
  if want.is_a?(String) && want.start_with?("<") && want.end_with?(">")
    return got.is_a?(String) if want == "<any string>"
    return got.is_a?(Numeric) && got >= 0 if want == "<any number>"
    return got.is_a?(String) && got.include?(want[12...-1]) if want.start_with?("<text with: ")
  end
  case want
  when Hash
    rest = want["<more>"]
    got.is_a?(Hash) &&
      want.all? { |k, v| k == "<more>" || (got.key?(k) && matches(v, got[k])) } &&
      got.all? { |k, v| want.key?(k) || (!rest.nil? && matches(rest, v)) }
  when Array
    got.is_a?(Array) && got.size == want.size && want.zip(got).all? { |w, g| matches(w, g) }
  else
    want.class == got.class && want == got
  end
end

def talk(lab)
  input = lab.map { |m| "#{m.is_a?(String) ? m : JSON.generate(m)}\n" }.join
  out = StringIO.new
  log, $stderr = $stderr, StringIO.new # the helper's log lines; its answers are what counts
  begin
    LabDriver::Loop.new(ContractClient.new, StringIO.new(input), out).run
  ensure
    $stderr = log
  end
  out.string.lines.map { |line| JSON.parse(line) }
end

transcript = JSON.parse(File.read(File.join(__dir__, "../../../contract/transcript.json")))
failed = 0
transcript["cases"].each do |c|
  got = talk(c["lab"])
  ok = matches(c["driver"], got)
  next if ok

  puts "FAIL #{c['name']}: #{c['about']}\n     want #{JSON.generate(c['driver'])}\n     got  #{JSON.generate(got)}"
  failed += 1
end
unless matches({ "a" => "<text with: bad>", "<more>" => "<any string>" }, { "a" => "a bad job", "b" => "x" }) &&
       !matches({ "a" => 1 }, { "a" => 1, "b" => "x" }) && !matches([1, 2], [2, 1]) &&
       !matches("<any number>", true) && !matches(1, 1.0)
  puts "FAIL the comparison takes patterns and nothing else"
  failed += 1
end
# the options the helper checks are the schema's, of the schema's types (an option it does not check
# is refused unless a driver honours it, as a new option is)
schema_types = File.read(File.join(__dir__, "../../../contract/schema.toml")).split("\n[options]\n")[1].split("\n[")[0]
                   .scan(/^(\w+) = \{ type = "([^"]+)"/).to_h
kinds = { boolean: "bool", integer: "integer", array: "list of string", string: "string" }
wrong = LabDriver::OPTION_TYPES.reject { |name, kind| schema_types[name] == kinds[kind] }
unless wrong.empty? && !schema_types.empty?
  puts "FAIL the options the helper checks are not the schema's: #{wrong}"
  failed += 1
end
puts "transcript: #{transcript['cases'].size} case(s), #{failed} failed"
exit(failed.zero? ? 0 : 1)
