# longnames.rb — methods and a file whose names are longer than rbinspect reads whole, for
# the marks of a cut name (issue #22). Ruby 2.7 to 3.4, no gems.
#
# usage: ruby longnames.rb          (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once every thread is parked and the truth file is written.
#
# Threads: first    Long.<PAIR>1 > Kernel#sleep      two method names of 602 bytes equal in
#          second   Long.<PAIR>2 > Kernel#sleep      their first 601 (past 512 bytes)
#          main     Long.<HUGE> > Kernel#sleep       a 5,000-byte name (more than the 4 KiB a
#                                                    name is read), defined in a file whose
#                                                    name has 5,003 bytes (more than 4 KiB)
#          <BIDI>   Long.<BIDI> > Kernel#sleep       a thread and a method whose names hold
#                                                    every bidirectional control (U+061C,
#                                                    U+200E/F, U+202A-E, U+2066-9), one
#                                                    after each "x"
# and classes of long names (below), for `objects --by-class`.
$stdout.sync = true
require_relative "lib/truth"

PAIR = "m" + "a" * 600
HUGE = "h" * 5000
HUGE_FILE = "f" * 5000 + ".rb"

module Long; end

Long.module_eval <<~RUBY, __FILE__, __LINE__ + 1
  def self.#{PAIR}1; RbiTruth.parking!; sleep; end
  def self.#{PAIR}2; RbiTruth.parking!; sleep; end
RUBY
Long.module_eval "def self.#{HUGE}; RbiTruth.parking!; sleep; end", HUGE_FILE, 1
BIDI = "bidi" + [0x061c, 0x200e, 0x200f, *0x202a..0x202e, *0x2066..0x2069].map { |c| "x" + c.chr(Encoding::UTF_8) }.join
Long.module_eval "def self.#{BIDI}; RbiTruth.parking!; sleep; end", __FILE__, __LINE__

# Classes: two of 608-byte paths equal in their first 607 bytes (3 and 4 instances), and
# one of a 5,006-byte path (5 instances), more than the 4 KiB a name is read.
CLASS_PAIR = "C" + "c" * 600
CLASS_HUGE = "H" * 5000
KEEP = [[CLASS_PAIR + "1", 3], [CLASS_PAIR + "2", 4], [CLASS_HUGE, 5]].flat_map do |name, n|
  klass = Long.const_set(name, Class.new)
  Array.new(n) { klass.new }
end

first = Thread.new { Long.send("#{PAIR}1") }
first.name = "first"
second = Thread.new { Long.send("#{PAIR}2") }
second.name = "second"
bidi = Thread.new { Long.send(BIDI) }
bidi.name = BIDI
RbiTruth.start("longnames")
Long.send(HUGE)
