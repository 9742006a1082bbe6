/* Names of record reasons: see record.h.  The table is generated from the
 * RECORD_REASONS X-macro so that an added reason cannot lack a name. */
#include "core/record.h"

static const char *const record_reason_names[] = {
#define RECORD_REASON_NAME(id, name) [RECORD_##id] = name,
	RECORD_REASONS(RECORD_REASON_NAME)
#undef RECORD_REASON_NAME
};

/* NULL for RECORD_NONE (no error to name) and for values out of range. */
const char *record_reason_name(enum record_reason r)
{
	if ((unsigned)r >= sizeof(record_reason_names) / sizeof(record_reason_names[0]))
		return NULL;
	return record_reason_names[r];
}
