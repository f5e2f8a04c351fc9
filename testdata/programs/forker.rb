# forker.rb — a forking server in miniature, for `record --subprocesses`: the parent forks
# WORKERS children (default 2) that each run hot.rb's loop (80 % Hot#spin, 20 % Cold#walk),
# and waits for them; it re-forks a worker that dies. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby forker.rb       (env: WORKERS=N)
#   Prints "READY <pid>" once every worker is forked, then runs until killed (SIGTERM stops
#   the workers too).
$stdout.sync = true
require_relative "lib/hot"

workers = Integer(ENV.fetch("WORKERS", "2"))
pids = Array.new(workers) { fork { HotLib.work } }
Signal.trap("TERM") { pids.each { |p| Process.kill("KILL", p) rescue nil }; exit!(0) }
$stdout.write("READY #{Process.pid}\n")
loop do
  dead = Process.wait
  i = pids.index(dead)
  pids[i] = fork { HotLib.work } if i
end
