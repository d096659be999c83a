/* What the bench's small C programs share: fail with the errno text, read a whole number. Each
 * program sets bench_tool_name to its own name for the messages. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* bench_tool_name = "bench";

static void die(const char* what) {
  fprintf(stderr, "%s: %s: %s\n", bench_tool_name, what, strerror(errno));
  exit(2);
}

/* A non-negative decimal number, or exit 2 naming the option. */
static long parse_long(const char* s, const char* name) {
  char* end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < 0) {
    fprintf(stderr, "%s: %s: not a whole number: %s\n", bench_tool_name, name, s);
    exit(2);
  }
  return v;
}
