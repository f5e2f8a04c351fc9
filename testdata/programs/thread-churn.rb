# thread-churn.rb — a process whose threads never stand still: 50 threads at any moment,
# each doing a little work in a method of its own and ending, replaced at once by a new one,
# so the VM's thread list changes thousands of times a second.  For the tests of reading a
# moving thread list (tests/integration/bt.sh): every `bt` must answer, never fail on a torn
# list.  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby thread-churn.rb [SECONDS]   Prints "READY <pid>" once the threads run, then
#   churns forever, or for SECONDS and exits with its threads still coming and going (for
#   record --pause on a process that exits: tests/integration/profile.sh).  Writes no truth
#   file: its threads come and go.
$stdout.sync = true

module Churn
  def self.short_life(n)
    x = 0
    (n % 200).times { x += 1 }
    x
  end
end

LIVE = 50
threads = Array.new(LIVE) { |i| Thread.new(i) { |n| Churn.short_life(n) } }
seconds = ARGV[0] && Float(ARGV[0])
puts "READY #{Process.pid}"
t_end = Process.clock_gettime(Process::CLOCK_MONOTONIC) + (seconds || 0)
i = LIVE
loop do
  break if seconds && Process.clock_gettime(Process::CLOCK_MONOTONIC) > t_end

  threads.each_index do |k|
    next if threads[k].alive?

    threads[k].join
    threads[k] = Thread.new(i += 1) { |n| Churn.short_life(n) }
  end
  Thread.pass
end
