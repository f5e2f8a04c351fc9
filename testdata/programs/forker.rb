# forker.rb — a forking server in miniature, for `record --subprocesses`: the parent forks
# WORKERS children (default 2) that each run hot.rb's loop (80 % Hot#spin, 20 % Cold#walk),
# and waits for them; it re-forks a worker that dies. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby forker.rb       (env: WORKERS=N, RBI_TRUTH=FILE, FORK_DELAY=SECONDS)
#   Forks the workers after FORK_DELAY seconds (default 0), writes "workers<TAB>PID PID..."
#   (the workers' pids) and "forked_ns<TAB>NS NS..." (CLOCK_MONOTONIC just before each fork,
#   the clock of a profile's samples) to RBI_TRUTH, prints "READY <pid>" once every worker is
#   forked, then runs until killed (SIGTERM stops the workers too).  With RBI_TRUTH, it works
#   in RBI_TRUTH.cwd, where a worker's core goes.
$stdout.sync = true
require_relative "lib/hot"

# A worker ends when its parent does: a test that kills the parent with SIGKILL must not
# leave its workers spinning for ever (a sleeping thread, never sampled as active).
def worker
  fork do
    parent = Process.ppid
    Thread.new { sleep 0.2 while Process.ppid == parent; exit!(0) }
    HotLib.work
  end
end

# A worker's core (the kernel writes it to the working directory) goes beside the truth file,
# as crash.rb's do (tests/crashes.sh crash_core).
if ENV["RBI_TRUTH"]
  Dir.mkdir("#{ENV["RBI_TRUTH"]}.cwd") unless Dir.exist?("#{ENV["RBI_TRUTH"]}.cwd")
  Dir.chdir("#{ENV["RBI_TRUTH"]}.cwd")
end
workers = Integer(ENV.fetch("WORKERS", "2"))
sleep Float(ENV.fetch("FORK_DELAY", "0"))
forked = []
pids = Array.new(workers) do
  forked << Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
  worker
end
Signal.trap("TERM") { pids.each { |p| Process.kill("KILL", p) rescue nil }; exit!(0) }
if ENV["RBI_TRUTH"]
  File.write(ENV["RBI_TRUTH"], "workers\t#{pids.join(" ")}\nforked_ns\t#{forked.join(" ")}\n")
end
$stdout.write("READY #{Process.pid}\n")
loop do
  dead = Process.wait
  i = pids.index(dead)
  pids[i] = worker if i
end
