# squeeze.rb — one thread compressing in a loop, for `record --native`: a Ruby method calls
# Zlib::Deflate.deflate, whose C function (the zlib extension) runs zlib's own C code
# without the GVL, with Ruby frames around it at known lines.  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby squeeze.rb
#   Writes the truth (ENV["RBI_TRUTH"], default /tmp/rbi-truth-PID.txt): the squeezer's stack
#   from its own caller_locations(0) on the line that calls deflate, innermost first, one
#   line each "frame<TAB>BASE_LABEL<TAB>PATH<TAB>LINENO"; prints "READY <pid>" and runs
#   until killed.
$stdout.sync = true
require "zlib"

# Compressible and not: deflate works hard (a few ms a call) on it.
INPUT = (("squeeze me " * 4096) + Random.new(1).bytes(1 << 15)) * 8

class Squeezer
  def run(truth)
    loop do
      Zlib::Deflate.deflate(INPUT, Zlib::BEST_COMPRESSION); truth &&= Squeezer.write(truth, caller_locations(0))
    end
  end

  def self.write(path, locations)
    File.write("#{path}.tmp", locations.map { |l| "frame\t#{l.base_label}\t#{l.path}\t#{l.lineno}\n" }.join)
    File.rename("#{path}.tmp", path)
    nil
  end
end

truth = ENV.fetch("RBI_TRUTH", "/tmp/rbi-truth-#{Process.pid}.txt")
squeezer = Thread.new { Squeezer.new.run(truth) }
squeezer.name = "squeezer"
sleep 0.01 until File.exist?(truth)
$stdout.write("READY #{Process.pid}\n")
squeezer.join
