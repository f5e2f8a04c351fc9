# lazy-sweep.rb — a heap the GC has marked and not yet swept: objects --by-class and heap-dump
# must leave out the garbage on the pages the lazy sweeper has not reached, as
# ObjectSpace.each_object and dump_all do (they finish the sweep first; from outside, the GC's
# own rule tells: an unmarked slot on a page still to be swept is garbage).  Ruby 2.7 to 3.4,
# no gems.
#
# usage: ruby lazy-sweep.rb   (env: RBI_TRUTH=FILE)
#   Keeps LIVE instances of Junk, makes GARBAGE more (all at once) and drops them, runs
#   GC.start(immediate_sweep: false), prints "READY <pid>" and sleeps without allocating.  The
#   truth file says "garbage<TAB>GARBAGE", then "live<TAB>N": the Junk the GC's mark kept, as
#   ObjectSpace.each_object counts them in a child forked after the GC (it finishes the sweep,
#   which this process must not).  N is LIVE, or more where the GC's conservative scan of the
#   machine stack found a stale word pointing at a garbage Junk (a clang or YJIT build may keep
#   one): that Junk is live for the GC and for each_object, so it is for us.  The GC's state
#   after the GC is appended as "state<TAB>sweeping" where GC.latest_gc_info knows it (3.0+).
$stdout.sync = true

class Junk
  def initialize(i)
    @i = i
  end
end

LIVE = 1000
GARBAGE = 200_000
truth = ENV["RBI_TRUTH"] || "/tmp/rbi-truth-#{Process.pid}.txt"
keep = Array.new(LIVE) { |i| Junk.new(i) }
File.write(truth, "garbage\t#{GARBAGE}\n")
ready = "READY #{Process.pid}\n"
# Held until the GC, so that no GC before it frees them: the heap grows to hold them all, and
# the sweep that follows the GC has every page of them to do.
doomed = Array.new(GARBAGE) { |i| Junk.new(i) }
doomed.clear
GC.start(full_mark: true, immediate_sweep: false)
counter = fork do
  File.open(truth, "a") { |f| f.write("live\t#{ObjectSpace.each_object(Junk).count}\n") }
  exit!(0)
end
Process.wait(counter)
state = (GC.latest_gc_info(:state) rescue nil)
File.open(truth, "a") { |f| f.write("state\t#{state}\n") } if state
$stdout.write(ready)
sleep
keep
