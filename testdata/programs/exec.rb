# exec.rb — a Ruby program that runs another Ruby program in its place (Kernel#exec, as
# `bundle exec` may), for the profiler's following of exec: Before#spin for SECONDS, then
# exec of this Ruby on itself with "after", which runs After#spin for SECONDS and exits.
# Ruby 2.7 to 3.4, no gems.
#
# usage: ruby exec.rb [SECONDS [first]]    (default 1)
#   Prints "READY <pid>" first (the pid stays the same across the exec).  With "first", the
#   exec repeats the command line byte for byte but "first" made "after" (the same length),
#   so that without address randomization (setarch -R) the new program's stack, code and
#   name are where the old one's were: nothing in /proc/PID/stat tells the exec.  Where
#   /proc cannot be read (a chroot), start it as RbConfig.ruby, the path it has there.
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
  if ARGV[1] == "first"
    # The command line as it was (a chroot may have no /proc: then RbConfig.ruby must be
    # what ran this, by the same path).
    argv = File.binread("/proc/self/cmdline").split("\0") rescue [RbConfig.ruby, $0, *ARGV]
    exec([argv[0], argv[0]], *argv[1..-2], "after")
  end
  exec(RbConfig.ruby, __FILE__, seconds.to_s, "after")
end
