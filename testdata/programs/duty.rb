# duty.rb — one thread that runs a quarter of the time and sleeps the rest (the GVL
# released), for the profiler's CPU-time mode: busy 25 ms on the CPU (Duty#burn), then
# sleep 75 ms, over and over. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby duty.rb
#   Prints "READY <pid>" and runs until killed.
$stdout.sync = true

class Duty
  def burn(seconds)
    t = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    x = 0
    x += 1 while Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - t < seconds
    x
  end

  def rest(seconds)
    sleep(seconds)
  end
end

duty = Duty.new
$stdout.write("READY #{Process.pid}\n")
loop do
  duty.burn(0.025)
  duty.rest(0.075)
end
