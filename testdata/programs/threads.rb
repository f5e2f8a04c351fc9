# threads.rb — the main test target: several threads parked in different kinds of blocking
# calls, reached through the kinds of frames an inspector must name. Ruby 2.7 to 3.4, no gems.
#
# usage: ruby threads.rb             (env: RBI_TRUTH=FILE, DEPTH=N)
#   Prints "READY <pid>" once every thread is parked and the truth file is written, then
#   stays parked forever without allocating. Stop it with SIGTERM or SIGKILL.
#   The truth file format is documented at the top of lib/truth.rb.
#
# Threads (names as in the truth file) and where they park:
#   main             Foo::Bar.run_main (singleton method) > Integer#times block >
#                    Required.park_main (a method of the required lib/required.rb) > Queue#pop.
#                    main holds MUTEX while parked.
#   sleeper          Foo::Bar#baz > Array#each block > Integer#times block > Foo::Bar.nap >
#                    Kernel#sleep
#   queue-waiter     Foo::Bar#method_missing (:wait_for_it) > define_method'd Foo::Bar#dm_pop >
#                    Queue#pop
#   mutex-waiter     instance_eval block > eval("lock_it(MUTEX)") > Foo::Locker#lock_it >
#                    Mutex#synchronize (MUTEX is held by main)
#   reader           Foo::Reader.read_one > IO#read on a pipe nobody writes to
#   requirer         require_relative "lib/required" whose top-level code (frame
#                    "<top (required)>") calls Required.block_in_require > Queue#pop
#   deep             only with DEPTH=N > 0: Foo.recurse N+1 frames deep > Kernel#sleep.
#                    The default 1 MiB VM stack holds DEPTH=10000 (about 10,500 is the limit
#                    on 2.7-3.4); deeper needs e.g. RUBY_THREAD_VM_STACK_SIZE=4194304.
#   rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb), parked in Queue#pop
# Heap: exactly 1234 live instances of Widget (see the truth's "class Widget 1234" line).
$stdout.sync = true
require_relative "lib/truth"

MUTEX = Mutex.new
PARKED = Queue.new # never receives anything: main and the waiters block on it

module Foo
  class Bar
    def self.nap
      RbiTruth.parking!
      sleep
    end

    def baz
      [1].each do |x|
        2.times { |i| Bar.nap if i == 1 }
      end
    end

    define_method(:dm_pop) do |q|
      RbiTruth.parking!
      q.pop
    end

    def method_missing(name, *args)
      return dm_pop(args[0]) if name == :wait_for_it
      super
    end

    def respond_to_missing?(name, include_private = false)
      name == :wait_for_it || super
    end

    def self.run_main
      3.times do |i|
        Required.park_main(PARKED) if i == 2
      end
    end
  end

  class Locker
    def lock_it(m)
      RbiTruth.parking!
      m.synchronize { :never }
    end
  end

  module Reader
    def self.read_one(io)
      RbiTruth.parking!
      io.read(1)
    end
  end

  def self.recurse(n)
    if n <= 0
      RbiTruth.parking!
      sleep
    else
      recurse(n - 1)
    end
  end
end

def named_thread(name, &block)
  t = Thread.new(&block)
  t.name = name
  t
end

# A class with a known instance count, for heap-walk tests ("class Widget 1234").
class Widget
  def initialize(i)
    @i = i
  end
end
WIDGETS = Array.new(1234) { |i| Widget.new(i) }

depth = Integer(ENV["DEPTH"] || "0")
MUTEX.lock # before the mutex-waiter starts
rd, wr = IO.pipe # wr stays open, so the reader never sees EOF
threads = [
  named_thread("sleeper") { Foo::Bar.new.baz },
  named_thread("queue-waiter") { Foo::Bar.new.wait_for_it(PARKED) },
  named_thread("mutex-waiter") { Foo::Locker.new.instance_eval { eval("lock_it(MUTEX)") } },
  named_thread("reader") { Foo::Reader.read_one(rd) },
  named_thread("requirer") { require_relative "lib/required" },
]
threads << named_thread("deep") { Foo.recurse(depth) } if depth > 0
Thread.pass until threads.all? { |t| RbiTruth.parked?(t) }
RbiTruth.start("threads", depth: depth)
Foo::Bar.run_main
