# hot.rb — a CPU-bound program with known hot spots, for the sampling profiler's tests and
# bench: 80 % of its time in Hot#spin, 20 % in Cold#walk (lib/hot.rb). Ruby 2.7 to 3.4, no
# gems, no allocation in the loop (so no GC).
#
# usage: ruby hot.rb [SECONDS]     (env: RBI_HOT_DEPTH=N)
#   Prints "READY <pid>" and runs until killed, or for SECONDS. RBI_HOT_DEPTH (default 0)
#   first recurses N levels (Nest.down) so the stacks are deeper: 42 gives 50 frames.
$stdout.sync = true
require_relative "lib/hot"

module Nest
  def self.down(depth, &blk)
    depth > 0 ? down(depth - 1, &blk) : yield
  end
end

seconds = ARGV[0] && Float(ARGV[0])
$stdout.write("READY #{Process.pid}\n")
Nest.down(Integer(ENV.fetch("RBI_HOT_DEPTH", "0"))) { HotLib.work(seconds) }
