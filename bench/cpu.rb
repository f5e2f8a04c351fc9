# cpu.rb — a CPU-bound Ruby benchmark for bench/profile.sh: fib(24) again and again, 50 frames
# down (so each sample of it reads a 50-frame stack), for ROUNDS rounds; prints "READY <pid>",
# waits DELAY seconds (for a sampler to attach), then prints "elapsed <seconds>" and exits.
#
# usage: ruby cpu.rb ROUNDS DELAY
$stdout.sync = true

def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def down(depth, &blk)
  depth > 0 ? down(depth - 1, &blk) : yield
end

rounds = Integer(ARGV[0] || 40)
delay = Float(ARGV[1] || 0)
$stdout.write("READY #{Process.pid}\n")
sleep delay
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
down(40) { rounds.times { fib(24) } }
$stdout.write("elapsed #{Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0}\n")
