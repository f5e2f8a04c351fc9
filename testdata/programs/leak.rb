# leak.rb — a process that leaks, a step at a time, for `heap diff`.  Each SIGUSR1 makes
# 1000 RbiLeak::Item objects that it keeps (the leak) and 3000 Strings it drops, runs a full
# GC and writes the number of steps so far to ENV["RBI_TRUTH"].ack, then sleeps again; GC
# stays off in between, so nothing else changes the heap.  Prints "READY <pid>" first.
# Ruby 2.7 to 3.4, no gems.
$stdout.sync = true

module RbiLeak
  class Item
    def initialize(n)
      @n = n
    end
  end
end

$rbi_leaked = []
$rbi_steps = 0
$rbi_asked = 0
ack = ENV.fetch("RBI_TRUTH") + ".ack"
trap("USR1") { $rbi_asked += 1 }
GC.start
GC.disable
$stdout.write("READY #{Process.pid}\n")
loop do
  # A Queue would do, but Ruby calls a lone thread waiting on one a deadlock.
  sleep 0.05 until $rbi_asked > $rbi_steps
  1000.times { |i| $rbi_leaked << RbiLeak::Item.new(i) }
  3000.times { |i| "dropped #{i}" }
  GC.enable
  GC.start
  GC.disable
  $rbi_steps += 1
  File.write(ack, $rbi_steps.to_s)
end
