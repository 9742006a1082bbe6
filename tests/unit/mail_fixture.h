/* A struct mail_ctx built by hand for the header-level parser tests, which
 * need only the arena, the scratch buffer and the charset cache (no
 * libmagic cookie): one place instead of one copy per test file. */
#ifndef INGEST_TEST_MAIL_FIXTURE_H
#define INGEST_TEST_MAIL_FIXTURE_H

#include "mail/charset.h"
#include "mail/mail_ctx.h"

static inline void mail_fixture_init(struct mail_ctx *ctx)
{
	arena_init(&ctx->arena, 0);
	dynbuf_init(&ctx->scratch, 0);
	ctx->charsets = charset_cache_new();
	ctx->sniff = NULL;
}

static inline void mail_fixture_release(struct mail_ctx *ctx)
{
	charset_cache_free(ctx->charsets);
	dynbuf_release(&ctx->scratch);
	arena_release(&ctx->arena);
}

#endif
