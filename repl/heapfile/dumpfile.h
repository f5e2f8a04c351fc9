/* dumpfile.h: an ObjectSpace.dump_all file read as it streams (dumpfile.c):
 * rbinspect heap-dump's or the target's own, gzip or plain, one JSON object
 * per line.  Shared by heap diff and heap retainers.  Not installed. */
#ifndef RBI_HEAPFILE_DUMPFILE_H
#define RBI_HEAPFILE_DUMPFILE_H

#include <stdint.h>

struct json_object;

/* Called with each line's object, borrowed for the call; a non-zero
   return ends the read and is returned. */
typedef int (*dumpfile_line_fn)(struct json_object *o, uint64_t lineno, void *arg);

/* Call FN for every non-empty line of the dump at PATH.  Memory holds one
   line at a time.  Errors (RBI_*, message set, naming PATH and the line):
   a file that cannot be read, a line that is not a JSON object, a line
   longer than any dump's, a gzip stream cut short or corrupt. */
int rbi_dumpfile_each(const char *path, dumpfile_line_fn fn, void *arg);

/* A field written as a hex string ("0x7f..."), as dump_all writes
   addresses; 0 when absent or not a string. */
uint64_t rbi_dumpfile_hex(struct json_object *o, const char *key);

/* An object's bytes: its "memsize" where the dump has it, else its
   "slot_size", else 40 (the slot of the Rubies that write neither). */
uint64_t rbi_dumpfile_bytes(struct json_object *o);

/* A string field; NULL when absent or not a string.  Borrowed from O. */
const char *rbi_dumpfile_str(struct json_object *o, const char *key);

#endif
