# fibers.rb — fibers where rbinspect has to find them, each with its own truth.  Ruby 2.7 to
# 3.4, no gems.
#
# usage: ruby fibers.rb   (env: RBI_TRUTH=FILE; RBI_FIBERS_MANY=N: also N fibers parked in
#   Fiber.yield, for the bounds and the bench)
#   Writes the fibers' truth to FILE.fibers, then the threads' (lib/truth.rb) to FILE, prints
#   "READY <pid>" and parks, in a directory of its own, FILE.cwd (where a core_pattern of
#   "core" puts the core of a `kill -ABRT`).
#
# Fibers (names as in FILE.fibers):
#   deep          Lab.level1 > level2 > level3 > Fiber.yield: suspended three calls deep
#   enum          an external enumerator after one #next: suspended in Enumerator::Yielder#<<
#   fibered-root  thread "fibered"'s root fiber, in Fiber#resume of ...
#   inner         ... this one, blocked in Queue#pop: the thread's current fiber (its frames
#                 are the thread's own backtrace in FILE; "expr" records of its frame 1,
#                 Lab.wait_inner: the module Lab's instance variables and two of its
#                 constants, by their bare names)
#   fresh         made and never resumed: no frames
#   done          resumed to its end: terminated, no frames
#   sched-0, sched-1  (3.0+) thread "scheduled" runs a Fiber.set_scheduler scheduler of its
#                 own (Lab::TinyScheduler); two Fiber.schedule fibers wait in its
#                 kernel_sleep (Kernel#sleep in Lab.request), the thread parks in Queue#pop
#
# FILE.fibers: "fiber<TAB>NAME<TAB>STATUS<TAB>THREAD<TAB>OBJECT<TAB>NFRAMES" (STATUS and
# OBJECT, the Fiber's address, from Fiber#inspect, "-" for enum: the Fiber.current taken in
# an enumerator's block on 3.4 has been seen dead at READY while the enumerator's fiber lives
# on, so the tests know it by its frames; THREAD the owner's name as in FILE; the current
# fiber of the main thread is "main-root"), then NFRAMES records
# "frame<TAB>NAME<TAB>INDEX<TAB>LABEL<TAB>PATH<TAB>LINENO<TAB>BASE_LABEL" as lib/truth.rb
# writes them: Fiber#backtrace_locations (3.0+).  Ruby 2.7 has no Fiber#backtrace: there each
# fiber takes its own caller_locations on the line where it parks, and the C method it parks
# in (Fiber.yield, Enumerator::Yielder#<<, Fiber#resume) is put on top as Ruby shows one (its
# caller's path and line).  Then "many<TAB>N", and "end".
$stdout.sync = true
require "fiber"
require_relative "lib/truth"

module Lab
  OWN = {}                      # 2.7: name -> [locations, C method on top]
  INNER = Queue.new
  # The module's own instance variables: self of the Lab.* frames ("expr" truth).
  @lab_int = 5
  @lab_str = "lab ivar"
  @lab_sym = :lab_sym
  # Constants only Lab's own code sees by their bare name (its lexical scope): p LEX_INT
  # in Lab.wait_inner ("expr" truth), no constant at the top level.
  LEX_INT = 42
  LEX_STR = "lexical"

  def self.level1
    level2
  end

  def self.level2
    level3
  end

  def self.level3
    OWN[:deep] = [caller_locations(0), "yield"]; Fiber.yield
  end

  def self.produce(y)
    OWN[:enum] = [caller_locations(0), "<<"]; y << 1
    y << 2
  end

  def self.run_fibered
    inner = Fiber.new { Lab.wait_inner }
    OWN[:"fibered-root"] = [caller_locations(0), "resume"]; inner.resume
  end

  def self.wait_inner
    RbiTruth.exprs(1, instance_variables.map { |iv| [iv, instance_variable_get(iv)] } +
                      [["LEX_INT", LEX_INT], ["LEX_STR", LEX_STR]])
    RbiTruth.parking!
    INNER.pop
  end

  def self.request(n)
    sleep(n + 1000)
  end

  # The least a Fiber.set_scheduler scheduler needs: a fiber that would block yields back
  # to whoever resumed it, and is kept in WAITING (it is never resumed again).
  class TinyScheduler
    WAITING = []

    def fiber(&block)
      Fiber.new(blocking: false, &block).tap(&:resume)
    end

    def kernel_sleep(*)
      WAITING << Fiber.current
      Fiber.yield
    end

    def block(*)
      kernel_sleep
    end

    def unblock(*); end

    def io_wait(*)
      kernel_sleep
    end

    def close; end
  end
end

def clean(s)
  RbiTruth.clean(s)
end

# The records of fiber NAME: LOCS are Location objects, innermost first.
def fiber_truth(name, fiber, thread, locs, object: true)
  address, status = fiber.inspect.match(/\A#<Fiber:(0x\h+).* \((\w+)[^()]*\)>\z/).captures
  address = object ? "0x#{address[2..].sub(/\A0+/, "")}" : "-"
  out = +"fiber\t#{name}\t#{status}\t#{thread}\t#{address}\t#{locs.size}\n"
  locs.each_with_index do |l, i|
    out << "frame\t#{name}\t#{i}\t#{clean(l.label)}\t#{clean(l.path)}\t#{l.lineno}\t#{clean(l.base_label)}\n"
  end
  out
end

# A C method's frame as Ruby's backtraces show it, on top of LOCS (2.7).
CFrame = Struct.new(:label, :path, :lineno, :base_label)
def locations(name, fiber)
  return fiber.backtrace_locations if fiber.respond_to?(:backtrace_locations)
  locs, cmeth = Lab::OWN.fetch(name)
  [CFrame.new(cmeth, locs[0].path, locs[0].lineno, cmeth)] + locs
end

truth = ENV["RBI_TRUTH"] || "/tmp/rbi-truth-#{Process.pid}.txt"
Dir.mkdir("#{truth}.cwd") unless Dir.exist?("#{truth}.cwd")
Dir.chdir("#{truth}.cwd")
deep = Fiber.new { Lab.level1 }
deep.resume
enum = Enumerator.new { |y| Lab::OWN[:enum_fiber] = Fiber.current; Lab.produce(y) }
enum.next
fresh = Fiber.new { :never }
done = Fiber.new { :done }
done.resume
many = Array.new(Integer(ENV.fetch("RBI_FIBERS_MANY", "0"))) { Fiber.new { Fiber.yield }.tap(&:resume) }

fibered_root = nil
fibered = Thread.new do
  fibered_root = Fiber.current
  Lab.run_fibered
end
fibered.name = "fibered"
sleep 0.001 until RbiTruth.parked?(fibered)

if Fiber.respond_to?(:set_scheduler)
  scheduled = Thread.new do
    Fiber.set_scheduler(Lab::TinyScheduler.new)
    2.times { |i| Fiber.schedule { Lab.request(i) } }
    RbiTruth.parking!
    Lab::INNER.pop
  end
  scheduled.name = "scheduled"
  sleep 0.001 until RbiTruth.parked?(scheduled)
end

out = +""
out << fiber_truth("deep", deep, "main", locations(:deep, deep))
out << fiber_truth("enum", Lab::OWN[:enum_fiber], "main", locations(:enum, Lab::OWN[:enum_fiber]),
                   object: false)
out << fiber_truth("fibered-root", fibered_root, "fibered",
                   locations(:"fibered-root", fibered_root))
out << fiber_truth("fresh", fresh, "main", [])
out << fiber_truth("done", done, "main", [])
out << fiber_truth("main-root", Fiber.current, "main", [])
Lab::TinyScheduler::WAITING.each_with_index do |f, i|
  out << fiber_truth("sched-#{i}", f, "scheduled", f.backtrace_locations)
end
out << "many\t#{many.size}\nend\n"
File.write("#{truth}.fibers.tmp", out)
File.rename("#{truth}.fibers.tmp", "#{truth}.fibers")

RbiTruth.start("fibers")
RbiTruth.parking!
sleep
