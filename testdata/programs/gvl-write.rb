# gvl-write.rb — four threads that each do a little Ruby work, then write 64 bytes to a file of
# their own with IO#syswrite (at its start again every 4096 writes), over and over. The write lets the GVL go, so after it each thread queues to
# get it back while another runs Ruby code: most of their time is waiting for the GVL, little
# of it is the write (the kernel's share of the process's CPU time, /proc/PID/stat, bounds it).
# For the sampler's GVL queue (RBI_STATE_GVL_WAIT) and CPU time (--mode cpu). Ruby 2.7 to 3.4.
#
# usage: ruby gvl-write.rb
#   Prints "READY <pid>" once every writer has written, then runs until killed.
$stdout.sync = true
require "fileutils"
require "tmpdir"

module Writer
  BYTES = ("x" * 64).freeze

  def self.work
    i = 0
    i += 1 while i < 2000
    i
  end

  def self.run(io, started)
    started << true
    loop do
      4096.times do
        work
        io.syswrite(BYTES)
      end
      io.sysseek(0)
    end
  end
end

started = Queue.new
dir = Dir.mktmpdir("gvl-write")
at_exit { FileUtils.rm_rf(dir) }
writers = 4.times.map do |n|
  io = File.open(File.join(dir, "out.#{n}"), "w")
  Thread.new { Writer.run(io, started) }.tap { |t| t.name = "writer-#{n}" }
end
4.times { started.pop }
$stdout.write("READY #{Process.pid}\n")
writers.each(&:join)
