# lines.rb — threads parked at lines that look odd but are the VM's own, for the check that
# rbinspect never marks a real line unknown (issue #22). Ruby 2.7 to 3.4, no gems.
#
# usage: ruby lines.rb          (env: RBI_TRUTH=FILE)
#   Prints "READY <pid>" once every thread is parked and the truth file is written.
#
# Threads: heredoc    in a heredoc's interpolation, lines after the line where its method
#                     ends (past the method's code_location)
#          negative   in code eval'd from line -10 (its lines are negative)
#          far        in code eval'd from line 1,000,000,000
#          rescue     in a rescue clause (its iseq starts at the begin, before its code)
#          ensure     in an ensure clause, in a heredoc after the begin's end
#          block      in a block whose `do` comes lines after the call's receiver
#          main       in a method module_eval'd with __FILE__, __LINE__ + 1
$stdout.sync = true
require_relative "lib/truth"

module Lines
  def self.heredoc; <<~TEXT; end
    #{:a}
    #{RbiTruth.parking!; sleep}
  TEXT

  eval("def self.negative\n  RbiTruth.parking!\n  sleep\nend\n", binding, "negative.rb", -10)
  eval("def self.far\n  RbiTruth.parking!\n  sleep\nend\n", binding, "far.rb", 1_000_000_000)

  def self.rescued
    begin
      raise "x"
    rescue
      RbiTruth.parking!
      sleep
    end
  end

  def self.ensured
    begin
      :body
    ensure
      <<~TEXT
        #{RbiTruth.parking!; sleep}
      TEXT
    end
  end

  def self.block
    [1]
      .map(
        &:itself
      ).each do
        RbiTruth.parking!
        sleep
      end
  end

  module_eval <<-RUBY, __FILE__, __LINE__ + 1
    def self.main
      RbiTruth.parking!
      sleep
    end
  RUBY
end

%w[heredoc negative far rescued ensured block].each do |m|
  Thread.new { Lines.send(m) }.name = m
end
RbiTruth.start("lines")
Lines.main
