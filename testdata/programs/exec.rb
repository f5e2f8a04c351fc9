# exec.rb — a Ruby program that runs another Ruby program in its place (Kernel#exec, as
# `bundle exec` may), for the profiler's following of exec: Before#spin for SECONDS, then
# exec of this Ruby on itself with "after", which runs After#spin for SECONDS and exits.
# Ruby 2.7 to 3.4, no gems.
#
# usage: ruby exec.rb [SECONDS]    (default 1)
#   Prints "READY <pid>" first (the pid stays the same across the exec).
require "rbconfig"
$stdout.sync = true

def spin(seconds)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < seconds
  x
end

class Before
  def self.spin(seconds)
    Object.send(:spin, seconds)
  end
end

class After
  def self.spin(seconds)
    Object.send(:spin, seconds)
  end
end

seconds = Float(ARGV[0] || 1)
if ARGV[1] == "after"
  After.spin(seconds)
else
  $stdout.write("READY #{Process.pid}\n")
  Before.spin(seconds)
  exec(RbConfig.ruby, __FILE__, seconds.to_s, "after")
end
