# twins.rb — two blocks in one method, both busy on the CPU: Ruby labels them alike
# ("block in Twins#run", or "block in run" before 3.4), only their first lines differ, so a
# profile that shows methods (top) must tell them apart by line.  Ruby 2.7 to 3.4, no gems.
#
# usage: ruby twins.rb
#   Writes the truth (ENV["RBI_TRUTH"], default /tmp/rbi-truth-PID.txt) once both blocks
#   ran: "block<TAB>LABEL<TAB>PATH<TAB>LINE" for each, from the block's own
#   caller_locations(0) (each block is one line, so LINE is its first line too); prints
#   "READY <pid>" and runs until killed.
$stdout.sync = true

class Twins
  def run(n)
    1.times { i = 0; i += 1 while i < n; @a ||= caller_locations(0, 1)[0] }
    1.times { i = 0; i += 1 while i < n; @b ||= caller_locations(0, 1)[0] }
    [@a, @b]
  end
end

twins = Twins.new
truth = ENV.fetch("RBI_TRUTH", "/tmp/rbi-truth-#{Process.pid}.txt")
File.write(truth, twins.run(1).map { |l| "block\t#{l.label}\t#{l.absolute_path}\t#{l.lineno}\n" }.join)
$stdout.write("READY #{Process.pid}\n")
loop { twins.run(200_000) }
