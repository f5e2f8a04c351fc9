/* layout.h: CRuby struct layouts as data.
 *
 * A walker never asks "which Ruby is this?"; it reads l->cfp.iseq.  Every
 * field the walkers use is listed once in RBI_LAYOUT_FIELDS, which drives
 * the DWARF reader, the built-in tables (generated: tables/), validation
 * and tools/layout-dump.  A field a Ruby does not have is RBI_ABSENT. */
#ifndef RBI_LAYOUT_H
#define RBI_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <elfutils/libdw.h>

#define RBI_ABSENT UINT32_MAX

/* X(group, field, C struct, member path, kind)
 * kind: OFF = byte offset of the member; SIZE = sizeof(struct);
 *       BIT = bit offset of a bitfield member; CONST = the value of the
 *       enumerator named by the path (in any enum; C struct ""). */
#define RBI_LAYOUT_FIELDS(X)                                                        \
	X(vm, size,              "rb_vm_struct", "", SIZE)                          \
	X(vm, gvl_owner,         "rb_vm_struct", "gvl.owner", OFF)                  \
	X(vm, gvl_waitq,         "rb_vm_struct", "gvl.waitq", OFF)                  \
	X(vm, main_thread,       "rb_vm_struct", "main_thread", OFF)                \
	X(vm, running_thread,    "rb_vm_struct", "running_thread", OFF)             \
	X(vm, living_threads,    "rb_vm_struct", "living_threads", OFF)             \
	X(vm, living_thread_num, "rb_vm_struct", "living_thread_num", OFF)          \
	X(vm, ractor_set,        "rb_vm_struct", "ractor.set", OFF)                 \
	X(vm, ractor_cnt,        "rb_vm_struct", "ractor.cnt", OFF)                 \
	X(vm, ractor_main_ractor, "rb_vm_struct", "ractor.main_ractor", OFF)        \
	X(vm, ractor_main_thread, "rb_vm_struct", "ractor.main_thread", OFF)        \
	X(vm, objspace,          "rb_vm_struct", "objspace", OFF)                   \
	X(vm, gc_objspace,       "rb_vm_struct", "gc.objspace", OFF)                \
	X(ractor, size,          "rb_ractor_struct", "", SIZE)                      \
	X(ractor, id,            "rb_ractor_struct", "pub.id", OFF)                 \
	X(ractor, threads_set,   "rb_ractor_struct", "threads.set", OFF)            \
	X(ractor, threads_cnt,   "rb_ractor_struct", "threads.cnt", OFF)            \
	X(ractor, gvl_owner,     "rb_ractor_struct", "threads.gvl.owner", OFF)      \
	X(ractor, gvl_waitq,     "rb_ractor_struct", "threads.gvl.waitq", OFF)      \
	X(ractor, sched_readyq,  "rb_ractor_struct", "threads.sched.readyq", OFF)   \
	X(ractor, sched_running, "rb_ractor_struct", "threads.sched.running", OFF)  \
	X(ractor, running_ec,    "rb_ractor_struct", "threads.running_ec", OFF)     \
	X(ractor, main_thread,   "rb_ractor_struct", "threads.main", OFF)           \
	X(ractor, vmlr_node,     "rb_ractor_struct", "vmlr_node", OFF)              \
	X(ractor, name,          "rb_ractor_struct", "name", OFF)                   \
	X(thread, size,          "rb_thread_struct", "", SIZE)                      \
	X(thread, vmlt_node,     "rb_thread_struct", "vmlt_node", OFF)              \
	X(thread, lt_node,       "rb_thread_struct", "lt_node", OFF)                \
	X(thread, self,          "rb_thread_struct", "self", OFF)                   \
	X(thread, ractor,        "rb_thread_struct", "ractor", OFF)                 \
	X(thread, vm,            "rb_thread_struct", "vm", OFF)                     \
	X(thread, nt,            "rb_thread_struct", "nt", OFF)                     \
	X(thread, ec,            "rb_thread_struct", "ec", OFF)                     \
	X(thread, thread_id,     "rb_thread_struct", "thread_id", OFF)              \
	X(thread, tid,           "rb_thread_struct", "tid", OFF)                    \
	X(thread, status,        "rb_thread_struct", "status", BIT)                 \
	X(thread, name,          "rb_thread_struct", "name", OFF)                   \
	X(thread, root_fiber,    "rb_thread_struct", "root_fiber", OFF)             \
	X(thread, gvl_node,      "rb_thread_struct", "native_thread_data.node.gvl", OFF) \
	X(thread, readyq_node,   "rb_thread_struct", "sched.node.readyq", OFF)      \
	X(native_thread, thread_id, "rb_native_thread", "thread_id", OFF)           \
	X(native_thread, tid,    "rb_native_thread", "tid", OFF)                    \
	X(ec, size,              "rb_execution_context_struct", "", SIZE)           \
	X(ec, vm_stack,          "rb_execution_context_struct", "vm_stack", OFF)    \
	X(ec, vm_stack_size,     "rb_execution_context_struct", "vm_stack_size", OFF) \
	X(ec, cfp,               "rb_execution_context_struct", "cfp", OFF)         \
	X(ec, fiber_ptr,         "rb_execution_context_struct", "fiber_ptr", OFF)   \
	X(ec, thread_ptr,        "rb_execution_context_struct", "thread_ptr", OFF)  \
	X(cfp, size,             "rb_control_frame_struct", "", SIZE)               \
	X(cfp, pc,               "rb_control_frame_struct", "pc", OFF)              \
	X(cfp, sp,               "rb_control_frame_struct", "sp", OFF)              \
	X(cfp, iseq,             "rb_control_frame_struct", "iseq", OFF)            \
	X(cfp, self,             "rb_control_frame_struct", "self", OFF)            \
	X(cfp, ep,               "rb_control_frame_struct", "ep", OFF)              \
	X(cfp, jit_return,       "rb_control_frame_struct", "jit_return", OFF)      \
	X(iseq, body,            "rb_iseq_struct", "body", OFF)                     \
	X(body, type,            "rb_iseq_constant_body", "type", OFF)              \
	X(body, iseq_size,       "rb_iseq_constant_body", "iseq_size", OFF)         \
	X(body, iseq_encoded,    "rb_iseq_constant_body", "iseq_encoded", OFF)      \
	X(body, pathobj,         "rb_iseq_constant_body", "location.pathobj", OFF)  \
	X(body, base_label,      "rb_iseq_constant_body", "location.base_label", OFF) \
	X(body, label,           "rb_iseq_constant_body", "location.label", OFF)    \
	X(body, first_lineno,    "rb_iseq_constant_body", "location.first_lineno", OFF) \
	X(body, insns_info_body, "rb_iseq_constant_body", "insns_info.body", OFF)   \
	X(body, insns_info_positions, "rb_iseq_constant_body", "insns_info.positions", OFF) \
	X(body, insns_info_size, "rb_iseq_constant_body", "insns_info.size", OFF)   \
	X(body, succ_index_table, "rb_iseq_constant_body", "insns_info.succ_index_table", OFF) \
	X(body, parent_iseq,     "rb_iseq_constant_body", "parent_iseq", OFF)       \
	X(body, local_iseq,      "rb_iseq_constant_body", "local_iseq", OFF)        \
	X(insn_info, size,       "iseq_insn_info_entry", "", SIZE)                  \
	X(rstring, len,          "RString", "len", OFF)                             \
	X(rstring, heap_len,     "RString", "as.heap.len", OFF)                     \
	X(rstring, heap_ptr,     "RString", "as.heap.ptr", OFF)                     \
	X(rstring, ary,          "RString", "as.ary", OFF)                          \
	X(rstring, embed_ary,    "RString", "as.embed.ary", OFF)                    \
	X(rstring, embed_len,    "RString", "as.embed.len", OFF)                    \
	X(rarray, heap_len,      "RArray", "as.heap.len", OFF)                      \
	X(rarray, heap_ptr,      "RArray", "as.heap.ptr", OFF)                      \
	X(rarray, ary,           "RArray", "as.ary", OFF)                           \
	X(cme, defined_class,    "rb_method_entry_struct", "defined_class", OFF)    \
	X(cme, def,              "rb_method_entry_struct", "def", OFF)              \
	X(cme, called_id,        "rb_method_entry_struct", "called_id", OFF)        \
	X(cme, owner,            "rb_method_entry_struct", "owner", OFF)            \
	X(method_def, type,      "rb_method_definition_struct", "type", BIT)        \
	X(method_def, body,      "rb_method_definition_struct", "body", OFF)        \
	X(method_def, original_id, "rb_method_definition_struct", "original_id", OFF) \
	X(svar, cref_or_me,      "vm_svar", "cref_or_me", OFF)                      \
	X(rclass, ptr,           "RClass", "ptr", OFF)                              \
	X(classext, iv_tbl,      "rb_classext_struct", "iv_tbl", OFF)               \
	X(rclass, classext,      "RClass_and_rb_classext_t", "classext", OFF)       \
	X(classext, super,       "rb_classext_struct", "super", OFF)                \
	X(classext, classpath,   "rb_classext_struct", "classpath", OFF)            \
	X(classext, attached_object, "rb_classext_struct", "as.singleton_class.attached_object", OFF) \
	X(rclass, super,         "RClass", "super", OFF)                            \
	X(body, local_table,     "rb_iseq_constant_body", "local_table", OFF)       \
	X(body, local_table_size, "rb_iseq_constant_body", "local_table_size", OFF) \
	X(body, builtin_attrs,   "rb_iseq_constant_body", "builtin_attrs", OFF)     \
	X(rsymbol, fstr,         "RSymbol", "fstr", OFF)                            \
	X(rfloat, value,         "RFloat", "float_value", OFF)                      \
	X(objspace, during_gc,   "rb_objspace", "flags.during_gc", BIT)             \
	X(objspace, gc_mode,     "rb_objspace", "flags.mode", BIT)                  \
	X(objspace, sorted,      "rb_objspace", "heap_pages.sorted", OFF)           \
	X(objspace, allocated_pages, "rb_objspace", "heap_pages.allocated_pages", OFF) \
	X(objspace, gc_count,    "rb_objspace", "profile.count", OFF)               \
	X(objspace, global_list,  "rb_objspace", "global_list", OFF)                \
	X(objspace, finalizer_table, "rb_objspace", "finalizer_table", OFF)         \
	X(objspace, obj_to_id_tbl, "rb_objspace", "obj_to_id_tbl", OFF)              \
	X(pin_array_list, next,   "pin_array_list", "next", OFF)                    \
	X(pin_array_list, len,    "pin_array_list", "len", OFF)                     \
	X(pin_array_list, array,  "pin_array_list", "array", OFF)                   \
	X(queue, que,             "rb_queue", "que", OFF)                           \
	X(enumerator, obj,        "enumerator", "obj", OFF)                         \
	X(enumerator, args,       "enumerator", "args", OFF)                        \
	X(enumerator, fib,        "enumerator", "fib", OFF)                         \
	X(enumerator, dst,        "enumerator", "dst", OFF)                         \
	X(enumerator, lookahead,  "enumerator", "lookahead", OFF)                   \
	X(enumerator, feedvalue,  "enumerator", "feedvalue", OFF)                   \
	X(enumerator, stop_exc,   "enumerator", "stop_exc", OFF)                    \
	X(enumerator, size,       "enumerator", "size", OFF)                        \
	X(enumerator, procs,      "enumerator", "procs", OFF)                       \
	X(dir, path,              "dir_data", "path", OFF)                          \
	X(btloc, size,            "rb_backtrace_location_struct", "", SIZE)         \
	X(btloc, type,            "rb_backtrace_location_struct", "type", OFF)      \
	X(btloc, iseq,            "rb_backtrace_location_struct", "iseq", OFF)      \
	X(btloc, body_iseq,       "rb_backtrace_location_struct", "body.iseq.iseq", OFF)\
	X(btloc, cme,             "rb_backtrace_location_struct", "cme", OFF)       \
	X(backtrace, backtrace,   "rb_backtrace_struct", "backtrace", OFF)          \
	X(backtrace, size,        "rb_backtrace_struct", "backtrace_size", OFF)     \
	X(backtrace, strary,      "rb_backtrace_struct", "strary", OFF)             \
	X(backtrace, locary,      "rb_backtrace_struct", "locary", OFF)             \
	X(frame_info, btobj,      "valued_frame_info", "btobj", OFF)                \
	X(gc_list, varptr,        "gc_list", "varptr", OFF)                         \
	X(gc_list, next,          "gc_list", "next", OFF)                           \
	X(heap_page, size,       "heap_page", "", SIZE)                             \
	X(heap_page, slot_size,  "heap_page", "slot_size", OFF)                     \
	X(heap_page, total_slots, "heap_page", "total_slots", OFF)                  \
	X(heap_page, start,      "heap_page", "start", OFF)                         \
	X(rvalue, size,          "RVALUE", "", SIZE)                                \
	X(rstring, heap_capa,    "RString", "as.heap.aux.capa", OFF)                \
	X(rarray, heap_capa,     "RArray", "as.heap.aux.capa", OFF)                \
	X(rtypeddata, type,      "RTypedData", "type", OFF)                         \
	X(rtypeddata, typed_flag, "RTypedData", "typed_flag", OFF)                  \
	X(rtypeddata, data,      "RTypedData", "data", OFF)                         \
	X(fiber, size,           "rb_fiber_struct", "", SIZE)                       \
	X(fiber, self,           "rb_fiber_struct", "cont.self", OFF)               \
	X(fiber, saved_ec,       "rb_fiber_struct", "cont.saved_ec", OFF)           \
	X(fiber, prev,           "rb_fiber_struct", "prev", OFF)                    \
	X(fiber, resuming_fiber, "rb_fiber_struct", "resuming_fiber", OFF)          \
	X(fiber, status,         "rb_fiber_struct", "status", BIT)             \
	X(robject, numiv,        "RObject", "as.heap.numiv", OFF)                   \
	X(robject, ivptr,        "RObject", "as.heap.ivptr", OFF)                   \
	X(robject, ary,          "RObject", "as.ary", OFF)                          \
	X(rhash, size,           "RHash", "", SIZE)                                 \
	X(rhash, table,          "RHash", "as.st", OFF)                             \
	X(rhash, ifnone,         "RHash", "ifnone", OFF)                            \
	X(ar_table, size,        "ar_table_struct", "", SIZE)                       \
	X(ar_table, pairs,       "ar_table_struct", "pairs", OFF)                   \
	X(st_table, num_entries, "st_table", "num_entries", OFF)                    \
	X(st_table, entries_start, "st_table", "entries_start", OFF)                \
	X(st_table, entries_bound, "st_table", "entries_bound", OFF)                \
	X(st_table, entries,     "st_table", "entries", OFF)                        \
	X(st_entry, size,        "st_table_entry", "", SIZE)                        \
	X(st_entry, hash,        "st_table_entry", "hash", OFF)                     \
	X(st_entry, key,         "st_table_entry", "key", OFF)                      \
	X(st_entry, record,      "st_table_entry", "record", OFF)               \
	X(shape_tree, shape_list, "rb_shape_tree_t", "shape_list", OFF)           \
	X(shape_tree, next_shape_id, "rb_shape_tree_t", "next_shape_id", OFF)     \
	X(shape, size,           "rb_shape", "", SIZE)                              \
	X(shape, next_iv_index,  "rb_shape", "next_iv_index", OFF)                  \
	X(shape, type,           "rb_shape", "type", OFF)                           \
	X(rstruct, heap_len,     "RStruct", "as.heap.len", OFF)                     \
	X(rstruct, heap_ptr,     "RStruct", "as.heap.ptr", OFF)                     \
	X(rstruct, ary,          "RStruct", "as.ary", OFF)                          \
	X(rstruct, embed_len_mask, "", "RSTRUCT_EMBED_LEN_MASK", CONST) \
	X(body, param_size,      "rb_iseq_constant_body", "param.size", OFF)       \
	X(classext, permanent_classpath, "rb_classext_struct", "permanent_classpath", BIT) \
	X(rmoved, destination,   "RMoved", "destination", OFF) \
	X(ec, machine_stack_start, "rb_execution_context_struct", "machine.stack_start", OFF) \
	X(ec, machine_stack_end, "rb_execution_context_struct", "machine.stack_end", OFF) \
	X(shape, edge_name,      "rb_shape", "edge_name", OFF)                      \
	X(shape, parent_id,      "rb_shape", "parent_id", OFF)                      \
	X(classext, iv_index_tbl, "rb_classext_struct", "iv_index_tbl", OFF)        \
	X(classext, iv_ptr,      "rb_classext_struct", "iv_ptr", OFF)               \
	X(iv_index_entry, index, "rb_iv_index_tbl_entry", "index", OFF)             \
	X(classext, const_tbl,   "rb_classext_struct", "const_tbl", OFF)            \
	X(id_table, capa,        "rb_id_table", "capa", OFF)                        \
	X(id_table, items,       "rb_id_table", "items", OFF)                       \
	X(id_item, size,         "rb_id_item", "", SIZE)                            \
	X(id_item, key,          "rb_id_item", "key", OFF)                          \
	X(id_item, val,          "rb_id_item", "val", OFF)                          \
	X(global_entry, var,     "rb_global_entry", "var", OFF)                     \
	X(global_var, data,      "rb_global_variable", "data", OFF)                 \
	X(global_var, marker,    "rb_global_variable", "marker", OFF)               \
	X(global_var, trace,     "rb_global_variable", "trace", OFF)                \
	X(trace_var, data,       "trace_var", "data", OFF)                          \
	X(trace_var, next,       "trace_var", "next", OFF)                          \
	X(vm, mark_object_ary,   "rb_vm_struct", "mark_object_ary", OFF)            \
	X(vm, top_self,          "rb_vm_struct", "top_self", OFF)                   \
	X(vm, load_path,         "rb_vm_struct", "load_path", OFF)                  \
	X(vm, loaded_features,   "rb_vm_struct", "loaded_features", OFF)            \
	X(vm, load_path_snapshot, "rb_vm_struct", "load_path_snapshot", OFF)        \
	X(vm, load_path_check_cache, "rb_vm_struct", "load_path_check_cache", OFF)  \
	X(vm, expanded_load_path, "rb_vm_struct", "expanded_load_path", OFF)        \
	X(vm, loaded_features_snapshot, "rb_vm_struct", "loaded_features_snapshot", OFF)\
	X(vm, loaded_features_realpaths, "rb_vm_struct", "loaded_features_realpaths", OFF)\
	X(vm, loaded_features_realpath_map, "rb_vm_struct", "loaded_features_realpath_map", OFF)\
	X(vm, orig_progname,      "rb_vm_struct", "orig_progname", OFF)             \
	X(vm, coverages,          "rb_vm_struct", "coverages", OFF)                 \
	X(vm, me2counter,         "rb_vm_struct", "me2counter", OFF)                \
	X(vm, thgroup_default,    "rb_vm_struct", "thgroup_default", OFF)           \
	X(vm, defined_module_hash, "rb_vm_struct", "defined_module_hash", OFF)      \
	X(vm, loading_table,      "rb_vm_struct", "loading_table", OFF)             \
	X(vm, trap_cmd,           "rb_vm_struct", "trap_list.cmd", OFF)             \
	X(vm, global_object_list, "rb_vm_struct", "global_object_list", OFF)        \
	X(vm, global_cc_cache_table, "rb_vm_struct", "global_cc_cache_table", OFF)   \
	X(global_object_list, varptr, "global_object_list", "varptr", OFF)          \
	X(global_object_list, next, "global_object_list", "next", OFF)              \
	X(ractor, self,           "rb_ractor_struct", "pub.self", OFF)              \
	X(heap_page, wb_unprotected_bits, "heap_page", "wb_unprotected_bits", OFF)  \
	X(heap_page, mark_bits,  "heap_page", "mark_bits", OFF)                     \
	X(heap_page, before_sweep, "heap_page", "flags.before_sweep", BIT)          \
	X(heap_page, uncollectible_bits, "heap_page", "uncollectible_bits", OFF)    \
	X(heap_page, marking_bits, "heap_page", "marking_bits", OFF)                \
	X(heap_page, pinned_bits, "heap_page", "pinned_bits", OFF)                  \
	X(heap_page, age_bits,   "heap_page", "age_bits", OFF)                      \
	X(shape, capacity,       "rb_shape", "capacity", OFF)                       \
	X(shape, edges,          "rb_shape", "edges", OFF)                          \
	X(id_table, size,        "rb_id_table", "", SIZE)                           \
	X(id_table, num,         "rb_id_table", "num", OFF)                         \
	X(shape_type, root,      "", "SHAPE_ROOT", CONST)                           \
	X(shape_type, ivar,      "", "SHAPE_IVAR", CONST)                           \
	X(shape_type, frozen,    "", "SHAPE_FROZEN", CONST)                         \
	X(shape_type, t_object,  "", "SHAPE_T_OBJECT", CONST)                       \
	X(shape_type, obj_too_complex, "", "SHAPE_OBJ_TOO_COMPLEX", CONST)          \
	X(imemo_type, env, "", "imemo_env", CONST)                                  \
	X(imemo_type, cref, "", "imemo_cref", CONST)                                \
	X(imemo_type, svar, "", "imemo_svar", CONST)                                \
	X(imemo_type, throw_data, "", "imemo_throw_data", CONST)                    \
	X(imemo_type, ifunc, "", "imemo_ifunc", CONST)                              \
	X(imemo_type, memo, "", "imemo_memo", CONST)                                \
	X(imemo_type, ment, "", "imemo_ment", CONST)                                \
	X(imemo_type, iseq, "", "imemo_iseq", CONST)                                \
	X(imemo_type, tmpbuf, "", "imemo_tmpbuf", CONST)                            \
	X(imemo_type, ast, "", "imemo_ast", CONST)                                  \
	X(imemo_type, parser_strterm, "", "imemo_parser_strterm", CONST)            \
	X(imemo_type, callinfo, "", "imemo_callinfo", CONST)                        \
	X(imemo_type, callcache, "", "imemo_callcache", CONST)                      \
	X(imemo_type, constcache, "", "imemo_constcache", CONST)                    \
	X(const_entry, value,    "rb_const_entry_struct", "value", OFF)             \
	X(global_var, getter,    "rb_global_variable", "getter", OFF)               \
	X(rrational, num,        "RRational", "num", OFF)                           \
	X(rrational, den,        "RRational", "den", OFF)                           \
	X(rcomplex, real,        "RComplex", "real", OFF)                           \
	X(rcomplex, imag,        "RComplex", "imag", OFF)                           \
	X(rregexp, src,          "RRegexp", "src", OFF)                             \
	X(rmatch, str,           "RMatch", "str", OFF)                              \
	X(rmatch, regexp,        "RMatch", "regexp", OFF)                           \
	X(st_table, size,        "st_table", "", SIZE)                              \
	X(st_table, entry_power, "st_table", "entry_power", OFF)                    \
	X(st_table, bins,        "st_table", "bins", OFF)                           \
	X(rfile, fptr,           "RFile", "fptr", OFF)                              \
	X(io, size,              "rb_io_t", "", SIZE)                               \
	X(io, self,              "rb_io_t", "self", OFF)                            \
	X(io, pathv,             "rb_io_t", "pathv", OFF)                           \
	X(io, tied_io_for_writing, "rb_io_t", "tied_io_for_writing", OFF)           \
	X(io, writeconv_asciicompat, "rb_io_t", "writeconv_asciicompat", OFF)       \
	X(io, writeconv_pre_ecopts, "rb_io_t", "writeconv_pre_ecopts", OFF)         \
	X(io, encs_ecopts,       "rb_io_t", "encs.ecopts", OFF)                     \
	X(io, write_lock,        "rb_io_t", "write_lock", OFF)                      \
	X(io, timeout,           "rb_io_t", "timeout", OFF)                         \
	X(io, rbuf_capa,         "rb_io_t", "rbuf.capa", OFF)                       \
	X(io, wbuf_capa,         "rb_io_t", "wbuf.capa", OFF)                       \
	X(io, cbuf_capa,         "rb_io_t", "cbuf.capa", OFF)                       \
	X(io, readconv,          "rb_io_t", "readconv", OFF)                        \
	X(io, writeconv,         "rb_io_t", "writeconv", OFF)                       \
	X(rbignum, heap_len,     "RBignum", "as.heap.len", OFF)                     \
	X(rbignum, heap_digits,  "RBignum", "as.heap.digits", OFF)                  \
	X(rregexp, ptr,          "RRegexp", "ptr", OFF)                             \
	X(regex, size,           "re_pattern_buffer", "", SIZE)                     \
	X(regex, p,              "re_pattern_buffer", "p", OFF)                     \
	X(regex, alloc,          "re_pattern_buffer", "alloc", OFF)                 \
	X(regex, exact,          "re_pattern_buffer", "exact", OFF)                 \
	X(regex, exact_end,      "re_pattern_buffer", "exact_end", OFF)             \
	X(regex, int_map,        "re_pattern_buffer", "int_map", OFF)               \
	X(regex, int_map_backward, "re_pattern_buffer", "int_map_backward", OFF)    \
	X(regex, repeat_range,   "re_pattern_buffer", "repeat_range", OFF)          \
	X(regex, repeat_range_alloc, "re_pattern_buffer", "repeat_range_alloc", OFF) \
	X(regex, chain,          "re_pattern_buffer", "chain", OFF)                 \
	X(rmatch, size,          "RMatch", "", SIZE)                                \
	X(rmatch, rmatch,        "RMatch", "rmatch", OFF)                           \
	X(match_data, size,      "rmatch", "", SIZE)                                \
	X(match_data, regs_allocated, "rmatch", "regs.allocated", OFF)              \
	X(match_data, char_offset_num_allocated, "rmatch", "char_offset_num_allocated", OFF) \
	X(matchext, regs_allocated, "rb_matchext_t", "regs.allocated", OFF)         \
	X(matchext, char_offset_num_allocated, "rb_matchext_t", "char_offset_num_allocated", OFF) \
	X(re_registers, size,    "re_registers", "", SIZE)                          \
	X(rmatch_offset, size,   "rmatch_offset", "", SIZE)                         \
	X(env, iseq,             "rb_env_t", "iseq", OFF)                           \
	X(env, ep,               "rb_env_t", "ep", OFF)                             \
	X(env, env,              "rb_env_t", "env", OFF)                            \
	X(env, env_size,         "rb_env_t", "env_size", OFF)                       \
	X(proc, block,           "rb_proc_t", "block", OFF)                         \
	X(block, as,             "rb_block", "as", OFF)                             \
	X(block, type,           "rb_block", "type", OFF)                           \
	X(block, captured_self,  "rb_block", "as.captured.self", OFF)               \
	X(block, captured_ep,    "rb_block", "as.captured.ep", OFF)                 \
	X(block, captured_code,  "rb_block", "as.captured.code", OFF)               \
	X(binding, block,        "rb_binding_t", "block", OFF)                      \
	X(binding, pathobj,      "rb_binding_t", "pathobj", OFF)                    \
	X(method, recv,          "METHOD", "recv", OFF)                             \
	X(method, klass,         "METHOD", "klass", OFF)                            \
	X(method, iclass,        "METHOD", "iclass", OFF)                           \
	X(method, owner,         "METHOD", "owner", OFF)                            \
	X(method, me,            "METHOD", "me", OFF)                               \
	X(method_def, iseq_overload, "rb_method_definition_struct", "iseq_overload", BIT) \
	X(method_def, iseqptr,   "rb_method_definition_struct", "body.iseq.iseqptr", OFF) \
	X(method_def, cref,      "rb_method_definition_struct", "body.iseq.cref", OFF) \
	X(method_def, attr_location, "rb_method_definition_struct", "body.attr.location", OFF) \
	X(method_def, bmethod_proc, "rb_method_definition_struct", "body.bmethod.proc", OFF) \
	X(method_def, bmethod_hooks, "rb_method_definition_struct", "body.bmethod.hooks", OFF) \
	X(method_def, original_me, "rb_method_definition_struct", "body.alias.original_me", OFF) \
	X(method_def, refined_orig_me, "rb_method_definition_struct", "body.refined.orig_me", OFF) \
	X(method_def, refined_owner, "rb_method_definition_struct", "body.refined.owner", OFF) \
	X(rclass, m_tbl,         "RClass", "m_tbl", OFF)                            \
	X(classext, m_tbl,       "rb_classext_struct", "m_tbl", OFF)                \
	X(classext, callable_m_tbl, "rb_classext_struct", "callable_m_tbl", OFF)    \
	X(classext, cc_tbl,      "rb_classext_struct", "cc_tbl", OFF)               \
	X(classext, cvc_tbl,     "rb_classext_struct", "cvc_tbl", OFF)              \
	X(classext, includer,    "rb_classext_struct", "includer", OFF)             \
	X(cvar_entry, cref,      "rb_cvar_class_tbl_entry", "cref", OFF)            \
	X(const_entry, file,     "rb_const_entry_struct", "file", OFF)              \
	X(cc_entries, len,       "rb_class_cc_entries", "len", OFF)                 \
	X(cc_entries, cme,       "rb_class_cc_entries", "cme", OFF)                 \
	X(cc_entries, entries,   "rb_class_cc_entries", "entries", OFF)             \
	X(cc_entry, size,        "rb_class_cc_entries_entry", "", SIZE)             \
	X(cc_entry, ci,          "rb_class_cc_entries_entry", "ci", OFF)            \
	X(cc_entry, cc,          "rb_class_cc_entries_entry", "cc", OFF)            \
	X(iseq, wrapper,         "rb_iseq_struct", "wrapper", OFF)                  \
	X(iseq, local_hooks,     "rb_iseq_struct", "aux.exec.local_hooks", OFF)     \
	X(body, coverage,        "rb_iseq_constant_body", "variable.coverage", OFF) \
	X(body, pc2branchindex,  "rb_iseq_constant_body", "variable.pc2branchindex", OFF) \
	X(body, script_lines,    "rb_iseq_constant_body", "variable.script_lines", OFF) \
	X(body, mandatory_only_iseq, "rb_iseq_constant_body", "mandatory_only_iseq", OFF) \
	X(body, call_data,       "rb_iseq_constant_body", "call_data", OFF)         \
	X(body, ci_size,         "rb_iseq_constant_body", "ci_size", OFF)           \
	X(body, has_kw,          "rb_iseq_constant_body", "param.flags.has_kw", BIT) \
	X(body, keyword,         "rb_iseq_constant_body", "param.keyword", OFF)     \
	X(body, catch_table,     "rb_iseq_constant_body", "catch_table", OFF)       \
	X(body, is_entries,      "rb_iseq_constant_body", "is_entries", OFF)        \
	X(body, ivc_size,        "rb_iseq_constant_body", "ivc_size", OFF)          \
	X(body, icvarc_size,     "rb_iseq_constant_body", "icvarc_size", OFF)       \
	X(body, ise_size,        "rb_iseq_constant_body", "ise_size", OFF)          \
	X(body, ic_size,         "rb_iseq_constant_body", "ic_size", OFF)           \
	X(body, mark_bits,       "rb_iseq_constant_body", "mark_bits.single", OFF)  \
	X(keyword, num,          "rb_iseq_param_keyword", "num", OFF)               \
	X(keyword, required_num, "rb_iseq_param_keyword", "required_num", OFF)      \
	X(keyword, default_values, "rb_iseq_param_keyword", "default_values", OFF)  \
	X(catch_table, entries,  "iseq_catch_table", "entries", OFF)                \
	X(catch_entry, size,     "iseq_catch_table_entry", "", SIZE)                \
	X(catch_entry, iseq,     "iseq_catch_table_entry", "iseq", OFF)             \
	X(call_data, size,       "rb_call_data", "", SIZE)                          \
	X(call_data, ci,         "rb_call_data", "ci", OFF)                         \
	X(call_data, cc,         "rb_call_data", "cc", OFF)                         \
	X(callcache, klass,      "rb_callcache", "klass", OFF)                      \
	X(callcache, cme,        "rb_callcache", "cme_", OFF)                       \
	X(ifunc, data,           "vm_ifunc", "data", OFF)                           \
	X(memo, v1,              "MEMO", "v1", OFF)                                 \
	X(memo, v2,              "MEMO", "v2", OFF)                                 \
	X(memo, u3,              "MEMO", "u3.value", OFF)                           \
	X(time, timew,           "time_object", "timew", OFF)                       \
	X(time, year,            "time_object", "vtm.year", OFF)                    \
	X(time, subsecx,         "time_object", "vtm.subsecx", OFF)                 \
	X(time, utc_offset,      "time_object", "vtm.utc_offset", OFF)              \
	X(time, zone,            "time_object", "vtm.zone", OFF)                    \
	X(argf, filename,        "argf", "filename", OFF)                           \
	X(argf, current_file,    "argf", "current_file", OFF)                       \
	X(argf, argv,            "argf", "argv", OFF)                               \
	X(argf, inplace,         "argf", "inplace", OFF)                            \
	X(argf, encs_ecopts,     "argf", "encs.ecopts", OFF)                        \
	X(autoload_const, mod,   "autoload_const", "mod", OFF)                      \
	X(autoload_const, module, "autoload_const", "module", OFF)                  \
	X(autoload_const, ad,    "autoload_const", "ad", OFF)                       \
	X(autoload_const, data_value, "autoload_const", "autoload_data_value", OFF) \
	X(autoload_const, value, "autoload_const", "value", OFF)                    \
	X(autoload_const, file,  "autoload_const", "file", OFF)                     \
	X(autoload_i, feature,   "autoload_data_i", "feature", OFF)                 \
	X(autoload_data, feature, "autoload_data", "feature", OFF)                  \
	X(autoload_data, mutex,  "autoload_data", "mutex", OFF)                     \
	X(is_entry, size,        "iseq_inline_storage_entry", "", SIZE)             \
	X(is_entry, once_value,  "iseq_inline_storage_entry", "once.value", OFF)    \
	X(ic, entry,             "iseq_inline_constant_cache", "entry", OFF)        \
	X(icvarc, entry,         "iseq_inline_cvar_cache_entry", "entry", OFF)      \
	X(cvar_entry, class_value, "rb_cvar_class_tbl_entry", "class_value", OFF) \
	X(cfp, block_code, "rb_control_frame_struct", "block_code", OFF) \
	X(ec, errinfo, "rb_execution_context_struct", "errinfo", OFF) \
	X(ec, root_svar, "rb_execution_context_struct", "root_svar", OFF) \
	X(ec, local_storage, "rb_execution_context_struct", "local_storage", OFF) \
	X(ec, local_storage_recursive_hash, "rb_execution_context_struct", "local_storage_recursive_hash", OFF) \
	X(ec, local_storage_recursive_hash_for_trace, "rb_execution_context_struct", "local_storage_recursive_hash_for_trace", OFF) \
	X(ec, private_const_reference, "rb_execution_context_struct", "private_const_reference", OFF) \
	X(ec, storage, "rb_execution_context_struct", "storage", OFF) \
	X(ec, machine_regs, "rb_execution_context_struct", "machine.regs", OFF) \
	X(thread, invoke_type, "rb_thread_struct", "invoke_type", OFF) \
	X(thread, invoke_proc, "rb_thread_struct", "invoke_arg.proc.proc", OFF) \
	X(thread, invoke_args, "rb_thread_struct", "invoke_arg.proc.args", OFF) \
	X(thread, invoke_func_arg, "rb_thread_struct", "invoke_arg.func.arg", OFF) \
	X(thread, thgroup, "rb_thread_struct", "thgroup", OFF) \
	X(thread, value, "rb_thread_struct", "value", OFF) \
	X(thread, pending_interrupt_queue, "rb_thread_struct", "pending_interrupt_queue", OFF) \
	X(thread, pending_interrupt_mask_stack, "rb_thread_struct", "pending_interrupt_mask_stack", OFF) \
	X(thread, top_self, "rb_thread_struct", "top_self", OFF) \
	X(thread, top_wrapper, "rb_thread_struct", "top_wrapper", OFF) \
	X(thread, stat_insn_usage, "rb_thread_struct", "stat_insn_usage", OFF) \
	X(thread, last_status, "rb_thread_struct", "last_status", OFF) \
	X(thread, locking_mutex, "rb_thread_struct", "locking_mutex", OFF) \
	X(thread, scheduler, "rb_thread_struct", "scheduler", OFF) \
	X(thread, interrupt_exec_tasks, "rb_thread_struct", "interrupt_exec_tasks", OFF) \
	X(thread, invoke_type_proc, "", "thread_invoke_type_proc", CONST) \
	X(thread, invoke_type_ractor_proc, "", "thread_invoke_type_ractor_proc", CONST) \
	X(thread, invoke_type_func, "", "thread_invoke_type_func", CONST) \
	X(fiber, first_proc, "rb_fiber_struct", "first_proc", OFF) \
	X(fiber, value, "rb_fiber_struct", "cont.value", OFF) \
	X(fiber, saved_vm_stack, "rb_fiber_struct", "cont.saved_vm_stack.ptr", OFF) \
	X(fiber, machine_stack, "rb_fiber_struct", "cont.machine.stack", OFF) \
	X(ractor, incoming_cnt, "rb_ractor_struct", "sync.incoming_queue.cnt", OFF) \
	X(ractor, recv_cnt, "rb_ractor_struct", "sync.recv_queue.cnt", OFF) \
	X(ractor, takers_cnt, "rb_ractor_struct", "sync.takers_queue.cnt", OFF) \
	X(ractor, taken_v, "rb_ractor_struct", "sync.wait.taken_basket.v", OFF) \
	X(ractor, taken_sender, "rb_ractor_struct", "sync.wait.taken_basket.sender", OFF) \
	X(ractor, yielded_v, "rb_ractor_struct", "sync.wait.yielded_basket.v", OFF) \
	X(ractor, yielded_sender, "rb_ractor_struct", "sync.wait.yielded_basket.sender", OFF) \
	X(ractor, receiving_mutex, "rb_ractor_struct", "receiving_mutex", OFF) \
	X(ractor, loc, "rb_ractor_struct", "loc", OFF) \
	X(ractor, r_stdin, "rb_ractor_struct", "r_stdin", OFF) \
	X(ractor, r_stdout, "rb_ractor_struct", "r_stdout", OFF) \
	X(ractor, r_stderr, "rb_ractor_struct", "r_stderr", OFF) \
	X(ractor, hooks, "rb_ractor_struct", "pub.hooks.hooks", OFF) \
	X(ractor, local_storage, "rb_ractor_struct", "local_storage", OFF) \
	X(ractor, idkey_local_storage, "rb_ractor_struct", "idkey_local_storage", OFF) \
	X(ractor, local_storage_store_lock, "rb_ractor_struct", "local_storage_store_lock", OFF) \
	X(ractor_local_key, type, "rb_ractor_local_key_struct", "type", OFF) \
	X(ractor_local_type, mark, "rb_ractor_local_storage_type", "mark", OFF) \
	X(ivc, entry,            "iseq_inline_iv_cache_entry", "entry", OFF)        \
	X(iv_entry, class_value, "rb_iv_index_tbl_entry", "class_value", OFF)       \
	X(body, jit_unit,        "rb_iseq_constant_body", "jit_unit", OFF)          \
	X(body, yjit_blocks,     "rb_iseq_constant_body", "yjit_blocks", OFF)

#define RBI_LAYOUT_MEMBER_(group, field, st, path, kind) uint32_t group##_##field;

struct rbi_layout {
	/* Where the numbers came from: "dwarf" or a table description. */
	const char *source;
	/* A table's numbers were checked against DWARF of a real build in
	   its range; the others were only derived from Ruby's headers. */
	bool checked;
	int major, minor, min_teeny;    /* what a table is for */
	RBI_LAYOUT_FIELDS(RBI_LAYOUT_MEMBER_)
};

struct rbi_layout_field_desc {
	const char *name;       /* "vm.ractor_main_thread" */
	const char *c_struct;
	const char *path;
	enum { RBI_FIELD_OFF, RBI_FIELD_SIZE, RBI_FIELD_BIT, RBI_FIELD_CONST } kind;
	size_t offset;          /* of the uint32_t in struct rbi_layout */
};

/* All fields, in RBI_LAYOUT_FIELDS order. */
extern const struct rbi_layout_field_desc rbi_layout_fields[];
extern const size_t rbi_layout_field_count;

static inline uint32_t rbi_layout_get(const struct rbi_layout *l, size_t i)
{
	return *(const uint32_t *)((const char *)l + rbi_layout_fields[i].offset);
}

/* The built-in table for MAJOR.MINOR.TEENY: the one of its family with the
   highest min_teeny <= TEENY; an unknown newer patch release gets the
   family's latest.  NULL if the family is unknown. */
const struct rbi_layout *rbi_layout_table(int major, int minor, int teeny);

/* Fill OUT from DWARF (all CUs are searched for each struct).  Fields whose
   struct or member is missing are RBI_ABSENT.  RBI_NO_LAYOUT if the core
   structs (VM, thread, control frame) are not described. */
int rbi_layout_from_dwarf(Dwarf *dw, struct rbi_layout *out);

/* Check internal consistency: every present offset lies inside its
   struct's size, sizes are sane.  RBI_LAYOUT with the first bad field. */
int rbi_layout_validate(const struct rbi_layout *l);

/* Write L as "group.field value|absent" lines (tools/layout-dump's and
   the cache's format). */
void rbi_layout_write(FILE *f, const struct rbi_layout *l);

/* The on-disk cache of DWARF layouts by build-id (cache.c), in DIR as
   rbi_open_opts.layout_cache says (NULL: the default; "": none).  Load
   returns false when there is no valid entry it may trust; store fails
   silently (a cache). */
struct rbi_build_id;
bool rbi_layout_cache_load(const char *dir, const struct rbi_build_id *id,
			   struct rbi_layout *out);
void rbi_layout_cache_store(const char *dir, const struct rbi_build_id *id,
			    const struct rbi_layout *l);

/* All built-in tables, NULL-terminated (layout.c's choice of one, and
   offline.c's search when the version is unknown). */
extern const struct rbi_layout *const rbi_layout_tables[];

#endif
