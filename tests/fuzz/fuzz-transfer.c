/* SPDX-License-Identifier: MIT */
/* Content-Transfer-Encoding decoders and uuencode blocks (transfer.h).
 * Every decoder runs over the whole input three ways: a full decode into an
 * exact-size buffer, a size-only pass (out NULL) and a prefix (out_cap
 * chosen by the first byte); the three must agree on the size and the
 * bytes, and never write past out_cap or grow past the input.  Base64
 * also runs given its leading run, as the MIME walk counts it. */
#include "fuzz.h"
#include "mail/transfer.h"

typedef uint64_t (*decoder)(const uint8_t *, size_t, uint8_t *, size_t, uint64_t *);

static void check_decoder(decoder f, const uint8_t *p, size_t n, size_t cap)
{
	uint64_t w1 = 0, w2 = 0, w3 = 0;
	uint8_t *full = malloc(n ? n : 1), *pre = malloc(cap ? cap : 1);
	FUZZ_CHECK(full && pre);

	uint64_t len = f(p, n, full, n, &w1);
	FUZZ_CHECK(len <= n);
	FUZZ_CHECK(f(p, n, NULL, 0, &w2) == len);
	FUZZ_CHECK(f(p, n, pre, cap, &w3) == len);
	size_t k = cap < len ? cap : (size_t)len;
	FUZZ_CHECK(k == 0 || memcmp(full, pre, k) == 0);
	FUZZ_CHECK(w1 == w2 && w1 == w3);
	FUZZ_CHECK(w1 >> MAIL_W__COUNT == 0);
	free(full);
	free(pre);
}

/* transfer_base64_decode_run() given the run counted first. */
static uint64_t b64_with_run(const uint8_t *p, size_t n, uint8_t *out, size_t cap, uint64_t *w)
{
	struct transfer_b64_run run = transfer_base64_run(p, n);
	FUZZ_CHECK(run.len <= n && run.sextets <= run.len);
	return transfer_base64_decode_run(p, n, &run, out, cap, w);
}

/* As the MIME walk uses it: the run counted to a delimiter's dash, the
 * part's content ending before the line end that precedes it, and the
 * run cut to the content (the cut bytes are white space: same count). */
static void check_b64_run_cut(const uint8_t *p, size_t n, size_t cap)
{
	struct transfer_b64_run run = transfer_base64_run(p, n);
	size_t end = run.len;
	if (end > 0 && p[end - 1] == '\n')
		end--;
	if (end > 0 && p[end - 1] == '\r')
		end--;
	struct transfer_b64_run cut = { end, run.sextets };
	uint8_t *pre = malloc(cap ? cap : 1), *full = malloc(end ? end : 1);
	FUZZ_CHECK(pre && full);
	uint64_t w1 = 0, w2 = 0;
	uint64_t len = transfer_base64_decode(p, end, full, end, &w1);
	FUZZ_CHECK(transfer_base64_decode_run(p, end, &cut, pre, cap, &w2) == len);
	FUZZ_CHECK(w1 == w2);
	size_t k = cap < len ? cap : (size_t)len;
	FUZZ_CHECK(k == 0 || memcmp(full, pre, k) == 0);
	free(pre);
	free(full);
}

static uint64_t uu_block_decode(const uint8_t *p, size_t n, uint8_t *out,
                                size_t cap, uint64_t *w)
{
	return transfer_uu_decode(p, n, out, cap, w);
}

static uint64_t as_uuencode(const uint8_t *p, size_t n, uint8_t *out, size_t cap, uint64_t *w)
{
	return transfer_decode(TRANSFER_UUENCODE, p, n, out, cap, w);
}

static uint64_t as_identity(const uint8_t *p, size_t n, uint8_t *out, size_t cap, uint64_t *w)
{
	return transfer_decode(TRANSFER_IDENTITY, p, n, out, cap, w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = fuzz_dup(data, size);
	size_t cap = size ? p[0] % 67 : 0;

	check_decoder(transfer_base64_decode, p, size, cap);
	check_decoder(b64_with_run, p, size, cap);
	check_b64_run_cut(p, size, cap);
	check_decoder(transfer_qp_decode, p, size, cap);
	check_decoder(uu_block_decode, p, size, cap);
	check_decoder(as_uuencode, p, size, cap);
	check_decoder(as_identity, p, size, cap);

	size_t k = size < 40 ? size : 40;
	char *v = (char *)fuzz_dup(p, k);
	enum transfer_encoding e = transfer_encoding_parse((struct str){ v, k });
	FUZZ_CHECK(e >= TRANSFER_IDENTITY && e <= TRANSFER_UNKNOWN);
	free(v);

	/* Every uuencoded block, in order, as the MIME walk finds them. */
	struct transfer_uu u;
	size_t from = 0, blocks = 0;
	while (from <= size && transfer_uu_find(p, size, from, &u)) {
		FUZZ_CHECK(from <= u.start && u.start < u.data);
		FUZZ_CHECK(u.data <= u.data_end && u.data_end <= u.end && u.end <= size);
		FUZZ_CHECK(u.terminated ? u.data_end < u.end : u.data_end == u.end);
		FUZZ_CHECK(!u.name.p || fuzz_str_within(u.name, p, size));
		check_decoder(uu_block_decode, p + u.data, u.data_end - u.data, cap);
		FUZZ_CHECK(u.end > from);   /* progress: no endless loop */
		from = u.end;
		FUZZ_CHECK(++blocks <= size);
	}
	free(p);
	return 0;
}
