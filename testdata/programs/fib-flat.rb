# fib-flat.rb — call-heavy code beside flat code, for bench/torn-bias.sh: one thread runs
# Object#fib(22) (a stack that moves all the time) then Object#flat (a loop that calls
# nothing, so its stack stands still), again and again, each about half of the time, and
# notes when each starts: the truth of what it ran at any moment.
#
# usage: ruby fib-flat.rb [FLAT_ITERATIONS]   (default 75000; env RBI_TRUTH=FILE)
#   Prints "READY <pid>" and runs until killed.  SIGUSR1 starts a window; SIGUSR2 ends it,
#   writes FILE: a line "fib T" or "flat T" each time one started in the window, T in ns of
#   CLOCK_MONOTONIC (the clock of a profile's sample times), the one running at its start
#   first; then prints "WINDOW <lines>".
$stdout.sync = true

def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def flat(n)
  i = 0
  i += 1 while i < n
  i
end

def now_ns
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
end

TRUTH = ENV["RBI_TRUTH"]
running = [:fib, now_ns]
starts = nil            # [phase, time] in the window
trap("USR1") { starts = [running.dup] }
trap("USR2") do
  if starts && TRUTH
    File.write(TRUTH + ".tmp", starts.map { |p, t| "#{p} #{t}\n" }.join)
    File.rename(TRUTH + ".tmp", TRUTH)
    $stdout.write("WINDOW #{starts.size}\n")
  end
  starts = nil
end

iters = Integer(ARGV[0] || 75_000)
$stdout.write("READY #{Process.pid}\n")
loop do
  running = [:fib, now_ns]
  starts << running if starts
  fib(22)
  running = [:flat, now_ns]
  starts << running if starts
  flat(iters)
end
