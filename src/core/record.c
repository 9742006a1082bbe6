/* Names and texts of record reasons: see record.h.  The tables are
 * generated from the RECORD_REASONS X-macro so that an added reason cannot
 * lack either. */
#include "core/record.h"

static const char *const record_reason_names[] = {
#define RECORD_REASON_NAME(id, name, text) [RECORD_##id] = name,
	RECORD_REASONS(RECORD_REASON_NAME)
#undef RECORD_REASON_NAME
};

static const char *const record_reason_texts[] = {
#define RECORD_REASON_TEXT(id, name, text) [RECORD_##id] = text,
	RECORD_REASONS(RECORD_REASON_TEXT)
#undef RECORD_REASON_TEXT
};

const char *record_reason_name(enum record_reason r)
{
	if ((unsigned)r >= RECORD__COUNT)
		return NULL;
	return record_reason_names[r];
}

const char *record_reason_text(enum record_reason r)
{
	if ((unsigned)r >= RECORD__COUNT || !record_reason_texts[r])
		return "internal error";
	return record_reason_texts[r];
}
