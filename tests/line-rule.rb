# line-rule.rb: the rule by which rbinspect calls a line one the VM cannot have, checked
# against this Ruby's own compiler (lines.sh runs it on every test Ruby).
#
# rbinspect (lib/vm/stack/iseq.c) shows a frame's line as unknown when its iseq's line table gives a
# line before its iseq's first line AND before the first line of the code it came from: the
# iseq reached by climbing parent_iseq from it until one is top-level, main or eval code or
# has no parent (a method's may have none). So no line may come before the first line of any
# method, class body, top-level or eval iseq that holds it (or is it). This compiles every .rb
# file of the Ruby's own library and checks, through RubyVM::InstructionSequence#to_a, every
# line of every iseq against that. It also counts the lines that come before the iseq's own
# first line (3.4.11's ensure and rescue clauses have some) and past the end of its
# code_location (heredocs make them): why rbinspect bounds neither.
#
# Prints "files N lines N before_code N before_first N past_end N", then at most 20 lines
# before the code.
$before = []
$counts = Hash.new(0)
# Where rbinspect's climb up parent_iseq may stop.
STOPS = %i[method class top main eval]

def iseq?(x)
  x.is_a?(Array) && x[0] == "YARVInstructionSequence/SimpleDataFormat"
end

def check(a, file, bound)
  first = a[8]
  bound = [bound, first].max if STOPS.include?(a[9])
  code_end = (a[4][:code_location] || [])[2]
  a[13].each do |x|
    if x.is_a?(Integer)
      $counts[:lines] += 1
      $counts[:past_end] += 1 if code_end && code_end >= first && x > code_end
      $counts[:before_first] += 1 if x < first
      if x < bound
        $counts[:before_code] += 1
        $before << "#{file}: #{a[5]} in code from line #{bound} has line #{x}" if $before.size < 20
      end
    elsif x.is_a?(Array)
      x.each { |o| check(o, file, bound) if iseq?(o) }
    end
  end
  (a[12] || []).each { |c| check(c[1], file, bound) if iseq?(c[1]) }
end

Dir[File.join(RbConfig::CONFIG["rubylibdir"], "**", "*.rb")].sort.each do |f|
  begin
    a = RubyVM::InstructionSequence.compile_file(f).to_a
  rescue ScriptError, StandardError
    next
  end
  $counts[:files] += 1
  check(a, f, a[8])
end
puts "files #{$counts[:files]} lines #{$counts[:lines]} before_code #{$counts[:before_code]} " \
     "before_first #{$counts[:before_first]} past_end #{$counts[:past_end]}"
puts $before
