# churn.rb — a heap that never stands still: the main thread allocates and drops objects of
# several types as fast as it can, so GCs run all the time, and compacts the heap now and then
# (Ruby 3.0+: objects move, T_MOVED slots appear). Ruby 2.7 to 3.4, no gems. For the tests
# that read a moving heap (tests/integration/objects.sh): never a crash or a hang, counts
# marked approximate, exact under --pause.
#
# usage: ruby churn.rb            (env: KEEP=N objects kept alive, default 200000)
#   Prints "READY <pid>" once the kept set is full, then churns forever. Writes no truth file.
$stdout.sync = true

# 2.7 has GC.compact, but on this heap it crashes by itself within a minute or two ([BUG]
# in rb_transient_heap_update_references: the transient heap's arrays and hashes), with or
# without a reader; compact.rb moves objects on 2.7.
COMPACT = GC.respond_to?(:compact) && RUBY_VERSION >= "3.0"
keep_n = Integer(ENV.fetch("KEEP", "200000"))
keep = Array.new(keep_n)
i = 0
keep_n.times { |j| keep[j] = "seed-#{j}" }
puts "READY #{Process.pid}"
while true
  j = i % keep_n
  keep[j] = case i % 4
            when 0 then "s#{i}"
            when 1 then [i, i]
            when 2 then { i => i }
            else Object.new
            end
  i += 1
  GC.compact if (i % 500_000).zero? && COMPACT
end
