# frozen_string_literal: true

# Test driver ruby-net-http-planted: ruby-net-http with a deliberate busy method on every request,
# which the CPU profile's differential must find and name (planted_slow_path).

require_relative "../../../drivers/ruby/net-http/driver"

class PlantedDriver < NetHttpDriver
  LOOPS = Integer(ENV.fetch("PLANTED_LOOPS", "20000"))

  # the written-out loop of a plain GET calls this before each request, so that the planted
  # driver differs from ruby-net-http by this work alone
  def initialize
    super
    @before_each = method(:planted_slow_path)
  end

  def request(req)
    planted_slow_path
    super
  end

  # a plain loop, no block and no method call: every sample in it is this method's own
  def planted_slow_path
    x = 0
    i = 0
    while i < LOOPS
      x = (x ^ (i * 7)) & 0xffffffff
      i += 1
    end
    x
  end
end

LabDriver.main(PlantedDriver.new)
