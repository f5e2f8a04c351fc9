# compact.rb — classes that move: three threads each define a new named class after another
# (class ChurnerN, one per round, so the newest live at the heap's end) and run its methods
# (ChurnerN#deep five levels down, then ChurnerN#churn, which allocates), while the main
# thread runs GC.compact again and again, moving classes, method entries, iseqs and path
# strings under a reader.  For tests/integration/bt.sh: every label stays qualified
# (ChurnerN#deep, never bare deep or an unknown method), every stack one the program can
# have (tests/churn-check.py).  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby compact.rb   Prints "READY <pid>" and runs until killed.  Writes no truth file:
#   its stacks never stand still.
$stdout.sync = true

KEEP = Array.new(20_000) { |j| "seed-#{j}" }
n = 0
lock = Mutex.new
define = lambda do
  k = lock.synchronize { n += 1 }
  eval(<<~RUBY, TOPLEVEL_BINDING, "(compact)", 1)
    class Churner#{k}
      def deep(d)
        d.zero? ? churn : deep(d - 1)
      end

      def churn
        2000.times { |i| KEEP[i * 7 % KEEP.size] = (i.even? ? "s\#{i}" : [i]) }
      end
    end
    Churner#{k}
  RUBY
end
3.times { Thread.new { loop { define.call.new.deep(5) } } }
puts "READY #{Process.pid}"
loop do
  GC.compact
  sleep 0.001
end
