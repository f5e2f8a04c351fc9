# spin.rb — a thread spinning in Ruby code (holding the GVL most of the time) next to parked
# threads. Ruby 2.7 to 3.4, no gems. For sampling, GVL-state and "busy thread" tests.
#
# usage: ruby spin.rb                (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once the other threads are parked and the truth file is written.
#   The spinner runs forever; it never allocates (Integer additions in a while loop).
#   The truth file format is documented at the top of lib/truth.rb.
#
# Threads:
#   main       <main> > Spin.park > Queue#pop
#   spinner    status "run": Spin.spin > (no further frames). The whole loop is on one line, so
#              its frames are the same whenever it is sampled: Spin.spin at that line, then
#              "block in <main>". Its truth record is a snapshot taken while it ran.
#   sleeper    Spin.nap > Kernel#sleep
#   rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb), parked in Queue#pop
$stdout.sync = true
require_relative "lib/truth"

PARKED = Queue.new

module Spin
  def self.spin
    i = 0
    while true do i += 1 end
  end

  def self.nap
    RbiTruth.parking!
    sleep
  end

  def self.park
    RbiTruth.parking!
    PARKED.pop
  end
end

sleeper = Thread.new { Spin.nap }
sleeper.name = "sleeper"
spinner = Thread.new { Spin.spin }
spinner.name = "spinner"
Thread.pass until RbiTruth.parked?(sleeper) && spinner.status == "run"
RbiTruth.start("spin", busy: [spinner])
Spin.park
