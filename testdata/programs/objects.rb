# objects.rb — a heap of known objects for `rbinspect objects`, and an exact count of it taken
# at a moment when nothing runs. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby objects.rb                    (env: RBI_TRUTH=FILE, SCALE=N, RBI_EXACT=FILE)
#   Allocates SCALE times a fixed set of objects of many types and classes (SCALE=1: about
#   60,000 objects; the benchmark uses SCALE=20 for over a million), keeps them all, writes the
#   truth file (lib/truth.rb: its "count" and "class" records are the interesting ones here)
#   and prints "READY <pid>". Before READY it prints "COUNT_OBJECTS_US <n>": how long the
#   program's own ObjectSpace.count_objects takes (after a GC.start; the median of 5), for
#   bench/objects.sh.
#
# The exact count (RBI_EXACT set). The truth's counts are taken while the truth writer still
# holds its records and before it runs code for the first time (which allocates method caches),
# so the heap at READY differs from them a little (tests/integration/objects.sh says how). For
# a comparison without any slack, the main thread can count the heap again at a moment when
# nothing allocates until the next signal:
#   SIGUSR1  the thread "rbi-objects-counter" wakes from its Queue#pop: GC.start, then
#            ObjectSpace.count_objects into a Hash made beforehand (filling an existing Hash
#            allocates no object) and ObjectSpace.each_object(Object) counted by class into
#            another, then one byte appended to RBI_EXACT.ack, and it parks again
#            where it was. Every call site on that path ran once before (a warm-up), so no
#            method cache is created after the count; the other threads stay parked (the
#            trap block itself runs on the main thread before the count). The heap now is
#            exactly that count, until:
#   SIGUSR2  write the counts to RBI_EXACT ("KEY<TAB>N" lines as count_objects has them,
#            "class<TAB>NAME<TAB>N" lines, then "end"), append a byte to RBI_EXACT.ack, park
#            again.
# So: send USR1, wait for 2 bytes in RBI_EXACT.ack (the warm-up wrote the first) and for every
# task to sleep, read the heap from outside, send USR2, wait for 3 bytes, compare.
$stdout.sync = true
require_relative "lib/truth"

SCALE = Integer(ENV.fetch("SCALE", "1"))

module Objs
  class Point
    def initialize(x, y)
      @x = x
      @y = y
    end
  end

  Pair = Struct.new(:left, :right)

  module Deep
    class Leaf
      def initialize(v)
        @v = v
      end
    end
  end

  class Empty; end
end

# Instances of an anonymous class: named "#<Class:0x...>" by Ruby and by rbinspect.
ANON = Class.new
KEEP = []

def allocate_all(scale)
  scale.times do |s|
    KEEP << Array.new(20_000) { |i| Objs::Point.new(i, s) }           # T_OBJECT
    KEEP << Array.new(5_000) { |i| Objs::Deep::Leaf.new(i) }          # T_OBJECT
    KEEP << Array.new(3_000) { Objs::Empty.new }                      # T_OBJECT
    KEEP << Array.new(4_000) { |i| Objs::Pair.new(i, s) }             # T_STRUCT
    KEEP << Array.new(15_000) { |i| "short-#{i}" }                    # T_STRING (embedded)
    KEEP << Array.new(2_000) { |i| "long-string-#{i}-" * 8 }          # T_STRING (malloc or
                                                                      #   a larger slot)
    KEEP << Array.new(3_000) { |i| [i, s, i + s] }                    # T_ARRAY
    KEEP << Array.new(2_000) { |i| { i => s, s => i } }               # T_HASH
    KEEP << Array.new(1_000) { |i| 1.0e300 * (i + 1) }                # T_FLOAT (not flonums)
    KEEP << Array.new(1_000) { |i| 2**70 + i }                        # T_BIGNUM
    KEEP << Array.new(500) { |i| Rational(i + 1, 7) }                 # T_RATIONAL
    KEEP << Array.new(500) { |i| Complex(i, 1) }                      # T_COMPLEX
    KEEP << Array.new(200) { |i| Regexp.new("rbi-#{s}-#{i}-[a-z]+") } # T_REGEXP
    KEEP << Array.new(300) { |i| "rbi-dsym-#{s}-#{i}".to_sym }        # T_SYMBOL (dynamic)
    KEEP << Array.new(100) { |i| "k#{i}v".match(/(\d+)/) }            # T_MATCH
    KEEP << Array.new(400) { Thread::Mutex.new }                      # T_DATA
    KEEP << Array.new(700) { ANON.new }                               # anonymous class
  end
end

# Counts the heap by type, then by class (neither allocates: both fill Hashes made beforehand,
# whose entries live outside the object heap), then acknowledges. Called once as a warm-up so
# every call site on the way from the count back to the parked Queue#pop has its method cache.
# No constant is read here: constant caches can be refilled after a later constant definition.
def count_now(gc, space, object, counts, by_class, ack_io, ack)
  by_class.clear
  gc.start
  space.count_objects(counts)
  space.each_object(object) { |o| by_class[o.class] += 1 }
  ack_io.syswrite(ack)
end

def write_exact(path, counts, by_class)
  File.open("#{path}.tmp", "w") do |f|
    counts.each { |k, n| f.write("#{k}\t#{n}\n") }
    by_class.each { |k, n| f.write("class\t#{(k.name || k.inspect).tr("\t\n", "  ")}\t#{n}\n") }
    f.write("end\n")
  end
  File.rename("#{path}.tmp", path)
end

allocate_all(SCALE)

GC.start
times = Array.new(5) do
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
  ObjectSpace.count_objects
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond) - t0
end
puts "COUNT_OBJECTS_US #{times.sort[2]}"

exact = ENV["RBI_EXACT"]
if exact
  counts = {}
  by_class = Hash.new(0)
  ack = "a".freeze
  ack_io = File.open("#{exact}.ack", "w")
  wake = Queue.new
  trap("USR1") { wake << 1 } # trap blocks run on the main thread, in its sleep
  trap("USR2") { wake << 2 }
  counter = Thread.new do
    count_now(GC, ObjectSpace, Object, counts, by_class, ack_io, ack) # the warm-up: 1st byte
    RbiTruth.parking!
    while true
      case wake.pop # parked here
      when 1 then count_now(GC, ObjectSpace, Object, counts, by_class, ack_io, ack)
      when 2
        write_exact(exact, counts, by_class)
        ack_io.syswrite(ack)
      end
    end
  end
  counter.name = "rbi-objects-counter"
end

RbiTruth.start("objects")
RbiTruth.parking!
sleep # not Queue#pop: a thread in Kernel#sleep keeps Ruby's deadlock check quiet
