# gc-time.rb — a program that spends a good share of its CPU time collecting garbage, and says
# how much: it keeps KEEP objects alive (so every major GC marks them) and allocates
# short-lived Strings and Arrays as fast as it can.  For bench/gc-share.sh: the profile's
# (garbage collection) share against the program's own count of its GC time.
# Ruby 2.7 to 3.4, no gems.
#
# usage: ruby gc-time.rb            (env: KEEP=N objects kept alive, default 300000)
#   Prints "READY <pid>" and runs until killed.  SIGUSR1 starts a window; SIGUSR2 ends it and
#   prints "WINDOW <gc ms> <cpu ms> <marking ms> <sweeping ms>": the time spent in GC
#   (GC.stat(:time); before 3.1, GC::Profiler's total), the process's CPU time
#   (CLOCK_PROCESS_CPUTIME_ID), and of the GC's time that of marking and of sweeping
#   (GC.stat(:marking_time), (:sweeping_time), Ruby 3.3 on; -1 before) in it.
#   STACKPROF=MICROSECONDS (a Ruby that can require "stackprof"): stackprof profiles each
#   window too, in its :cpu mode at that interval, and the WINDOW line goes on with its
#   samples: all of them, and those under (garbage collection), (marking), (sweeping).
$stdout.sync = true

STACKPROF = ENV.fetch("STACKPROF", "").empty? ? nil : Integer(ENV["STACKPROF"])
require "stackprof" if STACKPROF

STAT_TIME = GC.stat.key?(:time)
GC::Profiler.enable unless STAT_TIME

def gc_ms
  STAT_TIME ? GC.stat(:time).to_f : GC::Profiler.total_time * 1000.0
end

# Marking and sweeping time, ms (-1: not counted by this Ruby).
def phases_ms
  GC.stat.key?(:marking_time) ? [GC.stat(:marking_time), GC.stat(:sweeping_time)] : [-1, -1]
end

def cpu_ms
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :float_millisecond)
end

# stackprof's samples of the window just ended: all, under GC, marking, sweeping.
def stackprof_counts
  StackProf.stop
  r = StackProf.results
  named = ->(name) { r[:frames].each_value.select { |f| f[:name] == name }.sum { |f| f[:samples] } }
  [r[:samples], r[:gc_samples], named.("(marking)"), named.("(sweeping)")]
end

window = nil
trap("USR1") do
  GC::Profiler.clear unless STAT_TIME     # its total would grow with every GC it keeps
  window = [gc_ms, cpu_ms, *phases_ms]
  StackProf.start(mode: :cpu, interval: STACKPROF) if STACKPROF
end
trap("USR2") do
  if window
    now = [gc_ms, cpu_ms, *phases_ms]
    diff = now.zip(window).each_with_index.map { |(b, a), k| k >= 2 && a < 0 ? -1 : b - a }
    counts = STACKPROF ? " " + stackprof_counts.join(" ") : ""
    $stdout.write(format("WINDOW %.3f %.3f %.3f %.3f%s\n", *diff, counts))
    window = nil
  end
end

module Churn
  def self.run(keep)
    i = 0
    while true
      keep[i % keep.size] = "k#{i}" if (i % 16).zero?
      a = Array.new(32) { |j| "s#{i + j}" }
      i += a.size
    end
  end
end

keep = Array.new(Integer(ENV.fetch("KEEP", "300000"))) { |i| "seed-#{i}" }
$stdout.write("READY #{Process.pid}\n")
Churn.run(keep)
