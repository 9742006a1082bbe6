/* SPDX-License-Identifier: MIT */
/* RFC 3676 format=flowed, undone for the search text: see flowed.h. */
#include "mail/flowed.h"
#include "mail/textbuf.h"

size_t flowed_decode(const uint8_t *p, size_t n, bool delsp, char *out, size_t cap,
                   bool *full)
{
	struct textbuf o = { .p = out, .cap = cap };
	bool in_para = false;
	size_t para_q = 0, i = 0;

	while (i < n && !o.full) {
		size_t next, e = textbuf_line(p, n, i, &next);
		size_t q = 0, c = i;
		while (c < e && p[c] == '>')          /* 4.5: quote depth */
			c++, q++;
		size_t stuff = c < e && p[c] == ' ';  /* 4.4: space-stuffing */
		size_t cs = c + stuff;
		/* 4.3: the signature separator "-- " is never flowed. */
		bool sig = e - cs == 3 && memcmp(p + cs, "-- ", 3) == 0;
		bool flowed = e > cs && p[e - 1] == ' ' && !sig;
		size_t ce = flowed && delsp ? e - 1 : e;

		if (in_para && q != para_q) {
			/* 4.5: a quote depth change ends the paragraph (the
			 * sender broke the rules; keep the line break). */
			textbuf_put(&o, "\n", 1);
			in_para = false;
		}
		if (!in_para)
			textbuf_put(&o, p + i, q ? cs - i : 0);   /* keep "> " quote marks */
		if (ce > cs)
			textbuf_put(&o, p + cs, ce - cs);
		if (flowed) {
			in_para = true;
			para_q = q;
		} else {
			if (next > e || i < n)
				textbuf_put(&o, "\n", 1);
			in_para = false;
		}
		i = next;
	}
	/* Drop the LF we added after a last line that had none. */
	if (!o.full && o.len && n && p[n - 1] != '\n' && out[o.len - 1] == '\n')
		o.len--;
	if (full)
		*full = o.full;
	return o.len;
}
