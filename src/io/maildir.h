/* Maildir naming (https://cr.yp.to/proto/maildir.html and Maildir++):
 * flags after ":2," in cur/, the unique base name before ":", and folder names
 * (".Sent" → "Sent").  Pure string functions. */
#ifndef INGEST_MAILDIR_H
#define INGEST_MAILDIR_H

#include <stdbool.h>
#include <stddef.h>

/* Offset and length of the flag letters of a cur/ name ("1.2.h:2,FS" →
 * "FS"); false when the name carries no ":2," info. */
bool maildir_flags(const char *name, size_t len, size_t *off, size_t *n);
/* Length of the unique part of a name: everything before the ':' of the
 * info (",S=1234" size hints are part of the unique name). */
size_t maildir_base_len(const char *name, size_t len);
/* True for the names of a Maildir's three subdirectories. */
bool maildir_is_subdir(const char *name);

#endif
