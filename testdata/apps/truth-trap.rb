# truth-trap.rb — a real application's own truth at one instant, for the tests that run it
# (tests/integration/apps.sh).  Required by the application; on SIGPWR a process (a puma
# worker, the master) records every thread's backtrace (lib/truth.rb's format) into
# RBI_APP_TRUTH.PID while it holds the GVL, then stops itself (SIGSTOP, from the same line:
# the main thread's truth is the trap's own caller_locations under Process.kill); no Ruby
# thread moves until the test sends SIGCONT, so what rbinspect reads meanwhile is that instant.
#
# On SIGURG it writes what ObjectSpace.each_object counts of RbiKeep (below: the objects the
# heap tests count, KEPT live for the process's life, and TEMPORARIES more that a request
# leaves as garbage with RbiKeep.churn), the values of the app's RbiTrap.exprs (p EXPR), and
# the heap as ObjectSpace.dump_all writes it.
#
# The main thread's tid is the process's own pid: Ruby 3.1 keeps the parent's in a forked
# child's Thread#native_thread_id (what rbinspect must not believe either).
require "objspace"
require_relative "../programs/lib/truth"

class RbiKeep
  TEMPORARIES = 200
  def initialize(i)
    @i = i
  end

  def self.churn
    TEMPORARIES.times { |i| new(i) }
  end
end
KEPT = Array.new(2000) { |i| RbiKeep.new(i) }

module RbiTrap
  # "EXPR" => the inspect of its value, as p shows it: filled by the app.
  def self.exprs
    @exprs ||= {}
  end

  # Every thread's record, the main thread's from LOCS (where it will stop).
  def self.truth(locs)
    out = +"ruby_version\t#{RUBY_VERSION}\npid\t#{Process.pid}\n"
    Thread.list.each { |t| out << (t == Thread.main ? main_record(locs) : RbiTruth.record(t)) }
    out << "end\n"
  end

  # The main thread stopped in Process.kill (a C method: its caller's path and line), called
  # from the first of LOCS.
  def self.main_record(locs)
    top = locs.first
    out = +"thread\tmain\t#{Process.pid}\trun\t#{locs.size + 1}\n"
    out << "frame\tmain\t0\tkill\t#{top.path}\t#{top.lineno}\tkill\n"
    locs.each_with_index do |l, i|
      out << "frame\tmain\t#{i + 1}\t#{RbiTruth.clean(l.label)}\t#{RbiTruth.clean(l.path)}\t" \
             "#{l.lineno}\t#{RbiTruth.clean(l.base_label)}\n"
    end
    out
  end

  def self.write(text, what = nil)
    path = [ENV.fetch("RBI_APP_TRUTH"), what, Process.pid].compact.join(".")
    File.write("#{path}.tmp", text)
    File.rename("#{path}.tmp", path)
  end
end

# On SIGURG: RBI_APP_TRUTH.objects.PID says how many RbiKeep objects ObjectSpace.each_object
# sees (it finishes the GC's lazy sweep first: garbage is not counted), and the exprs; then
# RBI_APP_TRUTH.heap.PID is the heap as ObjectSpace.dump_all writes it, right after.
Signal.trap("URG") do
  out = +"RbiKeep\t#{ObjectSpace.each_object(RbiKeep).count}\n"
  RbiTrap.exprs.each { |expr, value| out << "expr\t#{expr}\t#{value}\n" }
  heap = [ENV.fetch("RBI_APP_TRUTH"), "heap", Process.pid].join(".")
  File.open("#{heap}.tmp", "w") { |f| ObjectSpace.dump_all(output: f) }
  File.rename("#{heap}.tmp", heap)
  RbiTrap.write(out, "objects")
end

Signal.trap("PWR") do
  RbiTrap.write(RbiTrap.truth(caller_locations(0))); Process.kill(:STOP, Process.pid)
end
