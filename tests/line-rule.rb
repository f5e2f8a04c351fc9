# line-rule.rb: the rule by which rbinspect calls a line one the VM cannot have, checked
# against this Ruby's own compiler (lines.sh runs it on every test Ruby).
#
# rbinspect (lib/vm/iseq.c) shows a frame's line as unknown when its iseq's line table gives a
# line before the iseq's first line (first_lineno).  This compiles every .rb file of the Ruby's
# own library and checks, through RubyVM::InstructionSequence#to_a, every line of every iseq
# (methods, blocks, classes, rescue and ensure clauses) against its first line: none may come
# before it.  It also counts the lines past the end of the iseq's code_location, which heredocs
# make: the reason rbinspect sets no bound at that end.
#
# Prints "files N lines N before_first N past_end N", then at most 20 lines before the first.
$before = []
$counts = Hash.new(0)

def iseq?(x)
  x.is_a?(Array) && x[0] == "YARVInstructionSequence/SimpleDataFormat"
end

def check(a, file)
  first = a[8]
  code_end = (a[4][:code_location] || [])[2]
  a[13].each do |x|
    if x.is_a?(Integer)
      $counts[:lines] += 1
      $counts[:past_end] += 1 if code_end && code_end >= first && x > code_end
      if x < first
        $counts[:before_first] += 1
        $before << "#{file}: #{a[5]} from line #{first} has line #{x}" if $before.size < 20
      end
    elsif x.is_a?(Array)
      x.each { |o| check(o, file) if iseq?(o) }
    end
  end
  (a[12] || []).each { |c| check(c[1], file) if iseq?(c[1]) }
end

Dir[File.join(RbConfig::CONFIG["rubylibdir"], "**", "*.rb")].sort.each do |f|
  begin
    a = RubyVM::InstructionSequence.compile_file(f).to_a
  rescue ScriptError, StandardError
    next
  end
  $counts[:files] += 1
  check(a, f)
end
puts "files #{$counts[:files]} lines #{$counts[:lines]} before_first #{$counts[:before_first]} " \
     "past_end #{$counts[:past_end]}"
puts $before
