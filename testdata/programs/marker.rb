# marker.rb — one thread that does Ruby work (method calls, small arrays) and, between pieces of
# it, reads its own CPU clock, as Rails' instrumentation does (Event#now_cpu): a few
# microseconds of Process.clock_gettime(CLOCK_THREAD_CPUTIME_ID) in a loop of about a hundred.
# It measures the markers' own share of its time, for bench/marker-share.sh to hold a profile
# to: every 64th round times a batch of 64 markers on the monotonic clock (the cost of one,
# under whatever the sampler does to it), and the share is markers made × that cost over the
# time elapsed.  Ruby 2.7 to 3.4, no gems.
#
# usage: RBI_TRUTH=FILE ruby marker.rb
#   Prints "READY <pid>", runs until killed; on SIGUSR2 writes "share PERCENT" and "cost US"
#   into FILE for the time since READY.
$stdout.sync = true

class Work
  def piece(n)
    a = Array.new(n) { |i| i * 3 }
    a.map { |x| x + 1 }.select(&:even?).sum
  end
end

module Marker
  BATCH = 64
  @made = 0
  @cost = []

  def self.mark
    @made += 1
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
  end

  # The cost of one marker now: a batch timed on the monotonic clock (vDSO, no system call).
  def self.calibrate
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    BATCH.times { mark }
    @cost << (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) / BATCH
  end

  def self.truth(since)
    cost = @cost.sum / [@cost.size, 1].max
    elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - since
    format("share %.2f\ncost %.2f\n", 100.0 * @made * cost / elapsed, cost * 1e6)
  end
end

truth = ENV.fetch("RBI_TRUTH")
work = Work.new
start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
Signal.trap("USR2") { File.write(truth, Marker.truth(start)) }
$stdout.write("READY #{Process.pid}\n")
round = 0
loop do
  work.piece(1000)
  Marker.mark
  round += 1
  Marker.calibrate if (round % 64).zero?
end
