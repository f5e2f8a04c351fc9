# heap.rb — a heap to dump, and the target's own ObjectSpace.dump_all of it as the truth.
# Arrays that hold objects (nested, repeated, a cycle, one sharing another's elements, a
# large one), Objects with few and many instance variables (and, 3.3+, in a table: "too
# complex" shapes; the same variables set in other orders, and frozen: other shapes), Hashes small (ar_table) and large (st_table) with objects for keys and
# values, some deleted, with a default proc and a default value, Structs small (in the
# slot) and wide, a Data (3.2+), Strings with control, escape, bidirectional-control and
# non-ASCII bytes, a long one, a binary one, named classes and modules and an anonymous
# one; Strings sharing another's bytes, dynamic Symbols, Bignums, heap Floats, Rationals,
# Complexes, Regexps, MatchData, a File, and a Hash of 1000 entries; Queues, an
# Enumerator, a Dir, a Mutex, a Random, backtraces and their locations; objects of
# other types with instance variables (generic ones: an Array, a Hash, a Struct, a Time, a
# Proc, Strings), whose addresses, and those of any other such object, it writes to
# RBI_TRUTH.genivar before the truth; an object with a finalizer; closures (Procs and
# lambdas of blocks, nested blocks, a method's block taken as a Proc, a Method's and a
# Symbol's Procs, a Binding, Methods bound and unbound; a Captured object reachable only
# through the environment of a Proc held in a global), and methods of each kind whose
# entry marks something: attribute reader and writer, alias, bmethod, refined (and, 3.3+,
# called through the refinement); classes with
# methods, constants, class instance and class variables, included and prepended modules
# and singleton methods; a Thread asleep and a Fiber suspended.  After a full GC (and with
# GC off, so nothing dumped is freed) it writes ObjectSpace.dump_all to ENV["RBI_TRUTH"] (a
# call through the refinement and an Enumerable#grep made in between: their call cache and
# memo are garbage it keeps), prints "READY <pid>" and sleeps: what it allocates afterwards
# is only what printing READY takes.  Ruby 2.7 to 3.4, no gems.
#
# RBI_HEAP_OBJECTS=N (bench/heap-dump.sh) adds N small Strings, in Arrays of 1000, and
# prints "DUMP_ALL_US <microseconds>": how long the program's own dump_all took.
#
# RBI_HEAP_TRACE=1 turns ObjectSpace.trace_object_allocations on first, so that dump_all
# writes "file", "line", "method" and "generation" for everything made after it; and, after
# a GC (a later generation), makes objects in RbiTraced's methods at known lines, one of
# them named by a dynamic Symbol.
require "objspace"
$stdout.sync = true
trace = ENV["RBI_HEAP_TRACE"] == "1"
ObjectSpace.trace_object_allocations_start if trace

module RbiHeap
  class Leaf
    def initialize(n)
      @n = n
    end
  end

  class Holder
    attr_reader :items

    def initialize(items)
      @items = items
    end
  end

  module Named; end

  # Instance variables: few (in the slot) and many (outside it up to 3.1).
  class Ivars
    def initialize(n, item)
      n.times { |i| instance_variable_set("@v#{i}", i.even? ? item : i) }
    end
  end

  # Held only by a closure's environment.
  class Captured; end

  # A method's block, kept as a Proc.
  def self.keep(&block)
    block
  end

  # Closures over a local and an argument, as blocks of three depths: their Procs and
  # environments (each block's pointing at the one around it).
  def self.closures(item)
    local = [item]
    counter = 0
    nested = [1, 2].map { |i| [3].map { |j| proc { local + [i, j] } } }
    [proc { local }, lambda { |x| counter += x }, keep { item }, nested,
     method(:keep).to_proc, :to_s.to_proc, binding, method(:capture), item.method(:object_id),
     method(:keep).unbind]
  end

  # A Proc whose environment alone holds ITEM.
  def self.capture(item)
    proc { item }
  end

  # Methods of the kinds whose entries mark more than their owner and class.
  class Kinds
    attr_accessor :value
    alias_method :other_value, :value
    define_method(:block_method) { Kinds }
  end

  module Refined
    refine(Kinds) do
      def value
        1
      end
    end
  end

  Pair = Struct.new(:left, :right)
  Wide = Struct.new(*(1..9).map { |i| :"m#{i}" })

  # Each with instance variables of its own names: past eight variations 3.3+ keeps
  # them in a table (a "too complex" shape).
  class Varied
    def initialize(i, item)
      4.times { |j| instance_variable_set("@v#{i}_#{j}", j.zero? ? item : j) }
    end
  end

  # Its NAMES set in the order given: each order a path of shapes of its own.
  class Ordered
    def initialize(names, item)
      names.each { |name| instance_variable_set(name, item) }
    end
  end

  # What the GC marks of classes and modules: methods, constants, class instance
  # variables, class variables (and, 3.3+, their caches), an included module (an
  # include wrapper) and a prepended one (an origin), singleton methods (a singleton
  # class), and call caches from calling them.
  module Mixin
    KIND = "mixin"

    def mixed
      :mixed
    end
  end

  module Prepended
    def area
      super * 1
    end
  end

  class Shape
    include Mixin
    prepend Prepended
    SIDES = [3, 4].freeze
    @@count = 0
    @registry = { "made" => [] }

    class << self
      attr_reader :registry

      def build
        @@count += 1
        new.tap { |s| Shape.registry["made"] << s }
      end
    end

    def area
      @@count
    end
  end

  class Square < Shape
    CORNERS = 4
    @side = "two"

    def self.side
      @side
    end
  end
end

# Calls through a refinement (made below, once GC is off: 3.4 frees such a call cache at
# the next GC, its iseq does not mark it): a refinement call's cache (cc_type_refinement)
# marks its method entry (3.4: and its class), where 3.3+ marks nothing of other call
# caches.  Not before 3.3: there `using` flushes every call cache (eval.c
# rb_clear_method_cache_all), the ones the truth would otherwise have.
using RbiHeap::Refined if RUBY_VERSION >= "3.3"

leaves = Array.new(50) { |i| RbiHeap::Leaf.new(i) }
nested = [leaves[0], [leaves[1], [leaves[2], leaves[2]]], leaves[0]]
cycle = [leaves[3]]
cycle << cycle
big = Array.new(3000) { |i| "item #{i}" }
shared = big[100, 2000]
strings = [
  "plain", "tab\there\nnewline", "\e[31mred\e[0m", "bidi \u202Eevil\u202C end",
  "caf\u00e9", "bin\xff\x00\x01".b, "x" * 5000, "ascii but binary".b,
]
anonymous = Class.new
ivars = [RbiHeap::Ivars.new(0, nil), RbiHeap::Ivars.new(2, leaves[5]),
         RbiHeap::Ivars.new(12, leaves[6]),
         *Array.new(12) { |i| RbiHeap::Varied.new(i, leaves[10 + i]) },
         *[%i[@a @b @c], %i[@c @b @a], %i[@b @a], %i[@a @b]].map { |names|
           RbiHeap::Ordered.new(names, leaves[33]) },
         RbiHeap::Ordered.new(%i[@a @b], leaves[34]).freeze,
         RbiHeap::Ordered.new(%i[@c], leaves[35]).freeze, Object.new.freeze]
small_hash = { leaves[7] => "seven", "eight" => leaves[8], 9 => 9 }
small_hash.delete(9)
big_hash = {}
40.times { |i| big_hash[RbiHeap::Leaf.new(i)] = i.even? ? leaves[i] : i }
big_hash.delete(big_hash.keys[3])
hashes = [small_hash, big_hash, Hash.new { |h, k| k }, Hash.new(leaves[9]), {}]
structs = [RbiHeap::Pair.new(leaves[22], 1), RbiHeap::Wide.new(*leaves[23, 9])]
structs << Data.define(:item).new(item: leaves[32]) if defined?(Data.define)
# The types marked by fixed words of their slot, each holding heap objects: Strings sharing
# another's bytes, dynamic Symbols, Bignums (in their slot and not), Rationals and
# Complexes of Bignums, heap Floats, Regexps and their MatchData, a File; and an st_table
# Hash of 1000 entries.
long = "y" * 1000
numbers = [2**100, 2**1000, Rational(2**70, 3), Rational(2**80, 2**75 + 1), Complex(2**71, 2**72),
           Complex(2**73, 0.5), 2.0**1000, -1.0e-310]
regexps = Array.new(5) { |i| Regexp.new("a(b+)c#{i}") }
plain = {
  strings: [long[1..], long[500..], "#{long}z"[3..]],
  symbols: Array.new(5) { |i| :"rbi_dynamic_#{i}" },
  numbers: numbers,
  regexps: regexps,
  matches: regexps.each_with_index.map { |re, i| "xabbc#{i}x".match(re) },
  file: File.open(__FILE__),
  wide: Array.new(1000) { |i| [i, leaves[i % 50]] }.to_h,
}
closures = RbiHeap.closures(leaves[33])
# A Thread asleep (made with a block and arguments, a fiber-local variable set) and a Fiber
# suspended in Fiber.yield: their execution contexts (VM stack, machine stack, locals)
# stay as they are while the program sleeps, so their references compare.
sleeper = Thread.new(leaves[40], "argument") do |item, _|
  Thread.current[:rbi_held] = item
  Thread.stop   # not sleep: its call cache would serve the main script's sleep after the truth
end
Thread.pass until sleeper.status == "sleep" && sleeper.stop?
suspended = Fiber.new { |item| Fiber.yield(item) && leaves[42] }
suspended.resume(leaves[41])
$rbi_closure = RbiHeap.capture(RbiHeap::Captured.new)
shapes = [RbiHeap::Shape.build, RbiHeap::Square.build]
shapes.each { |s| s.area && s.mixed }
RbiHeap::Square.side
# Queues holding objects.
queues = [Queue.new.tap { |q| q << leaves[40] }, SizedQueue.new(2).tap { |q| q << leaves[41] }]
# T_DATA whose marking is data: an Enumerator and a Dir (3.3+ declare theirs), a Mutex
# (marks nothing); a Random with a Bignum seed.
data_marked = [leaves.each_slice(2), Dir.new(__dir__), Mutex.new, Random.new(2**70)]
# Backtraces: Thread::Backtrace::Locations and a rescued exception's backtrace.
backtraces = [caller_locations(0), begin; raise "rbi"; rescue => e; e; end]
# Objects other than Objects, classes and modules with instance variables (FL_EXIVAR:
# kept in variable.c's table of generic ones, which the GC marks first): an Array, a Hash,
# a Struct, a Time, a Proc, and Strings, one with many, one with one removed.
generic = [[leaves[40]], { leaves[41] => 41 }, RbiHeap::Pair.new(leaves[42], 42), Time.at(0),
           proc { 43 }, +"generic", +"generic many", +"generic removed"]
generic.each_with_index { |o, i| o.instance_variable_set(:@held, leaves[44 + i % 6]) }
7.times { |i| generic[6].instance_variable_set("@v#{i}", i.even? ? leaves[i] : i) }
generic[7].instance_variable_set(:@other, leaves[49])
generic[7].remove_instance_variable(:@held)
# An object with a finalizer: the finalizers ROOT line.
finalized = RbiHeap::Leaf.new(-1)
ObjectSpace.define_finalizer(finalized, RbiHeap.method(:capture).to_proc)
$rbi_heap = [leaves, nested, cycle, big, shared, strings, anonymous, ivars, hashes, structs,
             RbiHeap::Holder.new([leaves[4], strings[2]]), RbiHeap::Named, plain, closures,
             shapes, finalized, queues, sleeper, suspended, generic, data_marked, backtraces]

if trace
  module RbiTraced
    def self.make
      [Object.new, "made in make", { here: __LINE__ }]
    end
  end
  GC.start
  dynamic = ["made", "by", ENV.fetch("RBI_TRACED_NAME", "dynamic")].join("_").to_sym
  RbiTraced.define_singleton_method(dynamic) { [Object.new, "made in a block"] }
  $rbi_traced = [RbiTraced.make, RbiTraced.public_send(dynamic)]
end

bulk = Integer(ENV.fetch("RBI_HEAP_OBJECTS", "0"))
$rbi_bulk = Array.new((bulk + 999) / 1000) { |i| Array.new(1000) { |j| "s#{i}.#{j}" } }

# Code first run after the truth fills its call sites' caches, and some with caches the
# truth already has (found again in the class's table: clock_gettime's, an interpolated
# Integer's to_s), which would differ from it: so the READY line is made before, and the
# timing runs only when asked for.
ready = "READY #{Process.pid}\n"
# The objects with generic instance variables (any, the load path's Strings among them),
# by address, to RBI_TRUTH.genivar: heap-check.py --genivar compares their references.
# Written before the truth: the code that finds them fills its call caches first.  Not
# with RBI_HEAP_OBJECTS (a benchmark's heap, millions of objects to look at).
genivar = []
ObjectSpace.each_object do |o|
  break if bulk > 0
  next if Module === o || (o.instance_variables.empty? rescue true)
  dump = ObjectSpace.dump(o)
  genivar << dump[/"address":"(0x\h+)"/, 1] unless dump.include?('"type":"OBJECT"')
end
File.write("#{ENV.fetch("RBI_TRUTH")}.genivar", genivar.map { |a| "#{a}\n" }.join)
genivar = nil
# The thread that calls dump_all is elsewhere then (in dump_all) than once the program
# sleeps: what marks its execution context cannot compare.  Named for heap-check.py in
# RBI_TRUTH.running: its address, and "ec" where thread_mark marks the execution context
# itself (up to 3.1; 3.3+ only through its Fiber, which heap-check.py finds).
File.write("#{ENV.fetch("RBI_TRUTH")}.running",
           "#{ObjectSpace.dump(Thread.current)[/"address":"(0x\h+)"/, 1]}" \
           "#{" ec" if RUBY_VERSION < "3.3"}\n")
GC.start
GC.disable
$rbi_refined = RbiHeap::Kinds.new.value
# An IMEMO memo (Enumerable#grep's: its pattern, its result), garbage the GC leaves be.
%w[a b].grep(/a/)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
File.open(ENV.fetch("RBI_TRUTH"), "w") { |f| ObjectSpace.dump_all(output: f) }
if bulk > 0
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
  $stdout.write("DUMP_ALL_US #{t1 - t0}\n")
end
$stdout.write(ready)
sleep
