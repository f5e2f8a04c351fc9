# fib-flat.rb — call-heavy code beside flat code, for bench/torn-bias.sh: one thread runs
# Object#fib(22) (a stack that moves all the time) then Object#flat (a loop that calls
# nothing, so its stack stands still), again and again, each about half of the time (the
# share is measured, not assumed: the bench compares against a paused recording).
#
# usage: ruby fib-flat.rb [FLAT_ITERATIONS]   (default 75000)
#   Prints "READY <pid>" and runs until killed.
$stdout.sync = true

def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def flat(n)
  i = 0
  i += 1 while i < n
  i
end

iters = Integer(ARGV[0] || 75_000)
$stdout.write("READY #{Process.pid}\n")
loop do
  fib(22)
  flat(iters)
end
