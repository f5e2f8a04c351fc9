# fiber-spin.rb — the main thread takes turns with two fibers, each burning CPU in a method of
# its own, for `record --fibers`: every sample of the main thread is taken in one of three
# fibers, and which one shows in its stack.  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby fiber-spin.rb
#   Writes the truth (ENV["RBI_TRUTH"], default /tmp/rbi-truth-PID.txt) once each fiber has
#   burned once: for each of "a", "b" (Fiber.new fibers) and "root" (the main thread's root
#   fiber), "fiber<TAB>NAME<TAB>OBJECT" (the Fiber's address, from Fiber#inspect), then the
#   fiber's stack from its own caller_locations(0) on the line that burns, innermost first,
#   "frame<TAB>NAME<TAB>BASE_LABEL<TAB>PATH<TAB>LINENO"; prints "READY <pid>" and runs until
#   killed.
$stdout.sync = true
require "fiber"

module Burn
  OWN = {}

  def self.burn_a
    OWN[:a] ||= caller_locations(0); x = 0; 20_000.times { x += 1 }
  end

  def self.burn_b
    OWN[:b] ||= caller_locations(0); x = 0; 20_000.times { x += 1 }
  end

  def self.burn_root
    OWN[:root] ||= caller_locations(0); x = 0; 20_000.times { x += 1 }
  end

  def self.write(path, fibers)
    lines = fibers.flat_map do |name, fiber|
      ["fiber\t#{name}\t#{fiber.inspect[/0x\h+/]}\n"] +
        OWN.fetch(name).map { |l| "frame\t#{name}\t#{l.base_label}\t#{l.path}\t#{l.lineno}\n" }
    end
    File.write("#{path}.tmp", lines.join)
    File.rename("#{path}.tmp", path)
  end
end

a = Fiber.new { loop { Burn.burn_a; Fiber.yield } }
b = Fiber.new { loop { Burn.burn_b; Fiber.yield } }
truth = ENV.fetch("RBI_TRUTH", "/tmp/rbi-truth-#{Process.pid}.txt")
loop do
  a.resume
  b.resume
  Burn.burn_root
  next unless truth
  Burn.write(truth, { a: a, b: b, root: Fiber.current })
  truth = nil
  $stdout.write("READY #{Process.pid}\n")
end
