# crash.rb — threads that write their own truth, then die as real Rubies die: a crash the
# kernel dumps after Ruby's own [BUG] handler ran.  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby crash.rb   (env: RBI_TRUTH=FILE, RBI_CRASHEXT=testdata/crashext/crashext.c built
#   as a shared object; default: crashext.so next to this program; RBI_CRASH_BALLAST_MB=N:
#   first fill N MiB of strings, for a core that size (bench/native-bt.sh))
#   Works in a directory of its own, RBI_TRUTH.cwd (where a core_pattern of "core" puts the
#   core), makes the FIFO RBI_TRUTH.fifo, prints "READY <pid>" once every thread is parked
#   and the truth file is written (lib/truth.rb), and then waits to be crashed:
#     - a byte written to the FIFO wakes "crasher", whose C method writes through NULL
#       (SIGSEGV, SEGV_MAPERR at 0x0, in that thread);
#     - "k" written to the FIFO makes that C method send SIGSEGV to its own process (the
#       kernel gives it to the main thread), and wait on;
#     - "n" makes it call through a NULL function pointer; "f" makes the crasher make that
#       call through Fiddle (Crasher#crash_by_fiddle: a Ruby with fiddle, libffi's);
#     - or another process sends it SIGSEGV (to the main thread too).
#   Either way Ruby prints its [BUG] report and aborts, and every other thread is still
#   where the truth says.  RBI_TRUTH.tid holds the crasher's kernel tid.
#
# Threads (names as in the truth file) and where they park:
#   main      Lab.run_main > Integer#times block > Lab.park_main > Queue#pop
#   sleeper   Lab::Sleeper#nap > Array#each block > Kernel#sleep
#   crasher   Lab::Crasher#run > Lab::Crasher#deeper (3 levels) > RbiCrash.park_then_crash;
#             the locals of the innermost deeper (frame 1) are in the truth
#   locker    Lab::Locker#wait > Thread::Mutex#lock, of a mutex the main thread holds
#   zipper    Lab::Zipper#run > Zlib::Deflate#deflate > block > Kernel#sleep: Ruby called
#             back from inside zlib's C code (native frames between two runs of Ruby frames)
#   rbi-truth, rbi-truth-helper   the truth writer (lib/truth.rb)
$stdout.sync = true
require_relative "lib/truth"
require "zlib"
require ENV["RBI_CRASHEXT"] || File.join(__dir__, "crashext.so")

BALLAST = Array.new(Integer(ENV.fetch("RBI_CRASH_BALLAST_MB", "0"))) { |i| (i % 251).chr * (1 << 20) }
truth = ENV["RBI_TRUTH"] || "/tmp/rbi-truth-#{Process.pid}.txt"
Dir.mkdir("#{truth}.cwd") unless Dir.exist?("#{truth}.cwd")
Dir.chdir("#{truth}.cwd")
FIFO = "#{truth}.fifo"
TID_FILE = "#{truth}.tid"
File.mkfifo(FIFO) unless File.exist?(FIFO)
PARKED = Queue.new
LOCK = Mutex.new
LOCK.lock

module Lab
  class Sleeper
    def nap
      [1].each do
        RbiTruth.parking!
        sleep
      end
    end
  end

  class Crasher
    def run
      deeper(3)
    end

    def deeper(n)
      return deeper(n - 1) if n > 0
      note = "in C next"
      RbiTruth.locals(1, local_variables, { n: n, note: note })
      RbiTruth.parking!
      crash_by_fiddle if RbiCrash.park_then_crash(FIFO, TID_FILE) == 1
    end

    # A call through a NULL function pointer made by Fiddle (libffi), as a gem binding a C
    # library with a callback never set crashes.
    def crash_by_fiddle
      require "fiddle"
      Fiddle::Function.new(0, [], Fiddle::TYPE_VOID).call
    end
  end

  class Locker
    def wait
      RbiTruth.parking!
      LOCK.lock
    end
  end

  class Zipper
    def run
      Zlib::Deflate.new.deflate(Random.new(1).bytes(1 << 20), Zlib::FINISH) do
        RbiTruth.parking!
        sleep
      end
    end
  end

  def self.park_main
    RbiTruth.parking!
    PARKED.pop
  end

  def self.run_main
    1.times { park_main }
  end
end

sleeper = Thread.new { Lab::Sleeper.new.nap }
sleeper.name = "sleeper"
crasher = Thread.new { Lab::Crasher.new.run }
crasher.name = "crasher"
locker = Thread.new { Lab::Locker.new.wait }
locker.name = "locker"
zipper = Thread.new { Lab::Zipper.new.run }
zipper.name = "zipper"
sleep 0.001 until File.exist?(TID_FILE) && !File.zero?(TID_FILE)
RbiTruth.start("crash")
Lab.run_main
