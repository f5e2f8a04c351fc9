# lib/truth.rb — writes the expected state ("truth") of a test program for rbinspect's tests.
# Works on Ruby 2.7 to 3.4, needs no gems.
#
# A program starts its threads, waits until each has reached its final blocking call, calls
# RbiTruth.start, and then parks its main thread. Every thread calls RbiTruth.parking! right
# before its final blocking call: Thread#status alone is not proof, since it also says "sleep"
# during any blocking system call (file reads while requiring, for instance). Two helper threads then record every thread
# while it is parked, write the truth file, print "READY <pid>" and park themselves; nothing
# runs or allocates afterwards (spin.rb's spinner excepted).
#
# Why two helpers: a thread's stack can only be recorded by another thread while it is parked,
# and whoever writes the file runs after everything was recorded. So the writer ("rbi-truth")
# records all other threads, then parks at the exact call where the helper ("rbi-truth-helper")
# records it; the helper parks again at the exact call where the writer recorded it; the writer
# wakes, writes, prints READY and loops back to its recorded call. Between READY and the writer
# re-entering Queue#pop only a few instructions run; a reader that must be exact waits until
# every task of the process is in state S (/proc/PID/task/*/stat, field 3).
#
# Truth file: ENV["RBI_TRUTH"], default /tmp/rbi-truth-PID.txt (PID = Process.pid, so 1 under
# tools/run-in-ns.sh: set RBI_TRUTH there). Written to a temporary name and renamed, so it
# appears complete. Plain text, one record per line, fields separated by one TAB, the first
# field naming the record. Parse with: awk -F'\t' '$1 == "frame" && $2 == "main" { ... }'
#
#   ruby_version      RUBY_VERSION                        e.g. 3.3.8
#   ruby_description  RUBY_DESCRIPTION
#   pid               Process.pid (namespace pid: 1 under run-in-ns.sh)
#   program           program name (threads, spin, simple)
#   depth             DEPTH used (threads.rb), else 0
#   thread  NAME  TID  STATUS  NFRAMES
#           one per Ruby thread, in Thread.list order (main first). NAME is "main", the
#           Thread#name, or "thread-N" (N = index in Thread.list) if unnamed. TID is
#           Thread#native_thread_id (Ruby >= 3.1; the namespace tid under run-in-ns.sh) or "-".
#           STATUS is Thread#status ("sleep" for parked threads; "run" for a busy thread,
#           whose frames are a snapshot). NFRAMES frame records for NAME follow in the file.
#   frame   NAME  INDEX  LABEL  PATH  LINENO  BASE_LABEL
#           Thread#backtrace_locations of thread NAME; INDEX 0 is the innermost frame.
#           LABEL/PATH/LINENO/BASE_LABEL are Location#label, #path, #lineno, #base_label.
#           C-function frames carry their caller's PATH and LINENO (Ruby's convention).
#           Tabs and newlines inside fields are replaced by spaces.
#   local   NAME  INDEX  VAR  CLASS  VALUE
#           a local variable of frame INDEX (as in the frame records) of thread NAME, recorded
#           by the program about itself before parking (RbiTruth.locals): one record per name
#           Kernel#local_variables lists in that frame (for a block: its own variables, then
#           those of the scopes around it), in that order. CLASS is the value's class name.
#           VALUE is value.inspect for nil, true, false, Integer and Float; for a Symbol or a
#           String the hex of its bytes (name.unpack1("H*")), so any byte survives; "-" for
#           anything else. Only some programs write them (simple.rb).
#   expr    NAME  INDEX  EXPR  CLASS  VALUE
#           what an expression (@ivar of self, $global, a constant path) is in frame INDEX of
#           thread NAME, recorded by the program (RbiTruth.exprs); CLASS and VALUE as for
#           "local". Only some programs write them (simple.rb).
#   param   NAME  INDEX  VAR  KIND
#           a parameter of the method frame INDEX of thread NAME runs, as its Method#parameters
#           lists it (KIND: req, opt, rest, keyreq, key, keyrest, block), recorded by the
#           program about itself (RbiTruth.params). Only some programs write them (simple.rb).
#   count   KEY  N       ObjectSpace.count_objects after GC.start (TOTAL, FREE, T_STRING, ...)
#   class   NAME  N      instances per class, from ObjectSpace.each_object(Object) after
#                        GC.start, most frequent first (top 40). Anonymous classes are inspected.
#   end                  last line
#
# Heap truth: with ENV["RBI_HEAP_TRUTH"] = "1", the writer also writes the program's own
# ObjectSpace.dump_all to the truth file's name + ".heap.json" after its final GC.start and turns GC off, so that every object
# dumped is still in a core taken later (the file is opened by RbiTruth.start, before the
# counts are taken: the dump adds no File to them).
#
# The counts are exact at the moment they are taken; the heap at READY differs from them by
# the truth's own temporary strings (about 10 per frame record, freed by a final GC.start).

module RbiTruth
  TOP_CLASSES = 40

  # Start the writer and its helper. busy: threads that never park (spin.rb's spinner); they
  # are recorded as they are at that moment and not waited for.
  def self.start(program, depth: 0, busy: [])
    @program = program
    @depth = depth
    @busy = busy
    @heap_out = heap_truth_file
    to_writer = Queue.new
    to_helper = Queue.new
    helper = Thread.new { helper_loop(to_helper, to_writer) }
    helper.name = "rbi-truth-helper"
    writer = Thread.new { writer_loop(to_writer, to_helper, helper) }
    writer.name = "rbi-truth"
    writer
  end

  # Records the writer while it is parked, then parks again at the same call, forever.
  def self.helper_loop(inbox, to_writer)
    parking! # its only blocking call is the pop below
    while true
      target = inbox.pop # the helper's recorded and final resting place
      Thread.pass until target.status == "sleep"
      to_writer << record(target)
    end
  end

  def self.writer_loop(inbox, to_helper, helper)
    others = Thread.list - [Thread.current]
    wait_parked(others)
    records = others.map { |t| [t, record(t)] }
    to_helper << Thread.current
    while true
      own = inbox.pop # recorded here by the helper; parks here forever after READY
      Thread.pass until helper.status == "sleep"
      write_truth(records, own)
      records = own = nil
      GC.start # free the truth's temporaries before READY
      dump_heap if @heap_out
      $stdout.write("READY #{Process.pid}\n")
      $stdout.flush
    end
  end

  # The truth file's name.
  def self.truth_path
    ENV["RBI_TRUTH"] || "/tmp/rbi-truth-#{Process.pid}.txt"
  end

  # The File the heap truth goes to (RBI_HEAP_TRUTH), or nil.
  def self.heap_truth_file
    return nil unless ENV["RBI_HEAP_TRUTH"] == "1"
    require "objspace"
    File.open("#{truth_path}.heap.json", "w")
  end

  # The heap as dump_all sees it, with nothing freed afterwards.
  def self.dump_heap
    GC.disable
    ObjectSpace.dump_all(output: @heap_out)
    @heap_out.close # 2.7 writes through a stdio FILE of its own, flushed by close
  end

  # Record the local variables of the caller's frame for "local" records. index: the frame's
  # index in the thread's backtrace once parked; names: Kernel#local_variables there;
  # values: a Hash of every one of them (no Binding: that would move the frame's variables
  # to the heap).
  def self.locals(index, names, values)
    raise "locals: #{names.sort} != #{values.keys.sort}" if names.sort != values.keys.sort
    values("local", index, names.map { |var| [var, values[var]] })
  end

  # Record what expressions (@ivar, $global, Const::PATH) give in frame INDEX for "expr"
  # records: pairs of the expression's text and its value there.
  def self.exprs(index, pairs)
    values("expr", index, pairs)
  end

  # KIND records of [name, value] PAIRS in frame INDEX (the format at the top).
  def self.values(kind, index, pairs)
    name = clean(thread_name(Thread.current))
    out = +""
    pairs.each do |var, v|
      shown = case v
              when nil, true, false, Integer, Float then v.inspect
              when Symbol then v.to_s.unpack1("H*")
              when String then v.unpack1("H*")
              else "-"
              end
      out << "#{kind}\t#{name}\t#{index}\t#{var}\t#{clean(v.class.name)}\t#{shown}\n"
    end
    (@locals ||= []) << out
  end

  # The parameters of the method running frame INDEX: Method#parameters there.
  def self.params(index, params)
    name = clean(thread_name(Thread.current))
    out = +""
    params.each { |kind, var| out << "param\t#{name}\t#{index}\t#{var}\t#{kind}\n" }
    (@locals ||= []) << out
  end

  # Call right before the thread's final blocking call (nothing may block in between).
  def self.parking!
    Thread.current.thread_variable_set(:rbi_parking, true)
  end

  # Is t blocked in its final call?
  def self.parked?(t)
    t.thread_variable_get(:rbi_parking) && t.status == "sleep"
  end

  # Wait until every thread but the busy ones is parked.
  def self.wait_parked(threads)
    threads.each do |t|
      next if @busy.include?(t)
      sleep 0.001 until parked?(t)
    end
  end

  def self.thread_name(t)
    return "main" if t == Thread.main
    t.name || "thread-#{Thread.list.index(t)}"
  end

  def self.clean(s)
    s.to_s.tr("\t\n", "  ")
  end

  # The thread's header line and frame lines, as one string.
  def self.record(t)
    status = t.status.to_s
    locs = t.backtrace_locations || []
    name = clean(thread_name(t))
    tid = t.respond_to?(:native_thread_id) ? (t.native_thread_id || "-") : "-"
    out = +"thread\t#{name}\t#{tid}\t#{status}\t#{locs.size}\n"
    locs.each_with_index do |l, i|
      out << "frame\t#{name}\t#{i}\t#{clean(l.label)}\t#{clean(l.path)}\t#{l.lineno}\t#{clean(l.base_label)}\n"
    end
    out
  end

  def self.write_truth(records, own)
    out = +""
    out << "ruby_version\t#{RUBY_VERSION}\n"
    out << "ruby_description\t#{clean(RUBY_DESCRIPTION)}\n"
    out << "pid\t#{Process.pid}\n"
    out << "program\t#{@program}\n"
    out << "depth\t#{@depth}\n"
    Thread.list.each do |t|
      pair = records.find { |th, _| th == t }
      out << (t == Thread.current ? own : pair ? pair[1] : record(t))
    end
    (@locals || []).each { |l| out << l }
    out << counts
    out << "end\n"
    path = truth_path
    tmp = "#{path}.tmp"
    File.open(tmp, "w") { |f| f.write(out) }
    File.rename(tmp, path)
  end

  def self.counts
    GC.start
    objs = ObjectSpace.count_objects
    classes = Hash.new(0)
    ObjectSpace.each_object(Object) { |o| classes[o.class] += 1 }
    out = +""
    objs.each { |k, n| out << "count\t#{k}\t#{n}\n" }
    top = classes.sort_by { |k, n| [-n, k.name || k.inspect] }.first(TOP_CLASSES)
    top.each { |k, n| out << "class\t#{clean(k.name || k.inspect)}\t#{n}\n" }
    out
  end
end
