# lib/hot.rb — the known hot spots of hot.rb and forker.rb: Hot#spin and Cold#walk run the very
# same loop, Hot#spin for 4 units and Cold#walk for 1, so their shares of CPU time are 80 and
# 20 %. No allocation in the loop (so no GC). Ruby 2.7 to 3.4, no gems.

class Hot
  def spin(n)
    i = 0
    while i < n
      i += 1
    end
    i
  end
end

class Cold
  def walk(n)
    i = 0
    while i < n
      i += 1
    end
    i
  end
end

module HotLib
  UNIT = 50_000

  # Spin for SECONDS (nil: forever).
  def self.work(seconds = nil)
    hot = Hot.new
    cold = Cold.new
    stop = seconds ? Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds : nil
    loop do
      hot.spin(4 * UNIT)
      cold.walk(UNIT)
      break if stop && Process.clock_gettime(Process::CLOCK_MONOTONIC) > stop
    end
  end
end
