/* SPDX-License-Identifier: MIT */
/* gmime_parse: the GMime 3 peer for bench/run (built only when
 * libgmime-3.0-dev is present).  For every path in LIST (one per line): read
 * the file, parse it with GMime and write one JSON line with the fields ingest
 * extracts: message_id, from, to, subject, date (UTC ISO 8601), text (the
 * first text/plain part decoded to UTF-8, else text/html), attachment names.
 * Usage: gmime_parse LIST */
#include <fcntl.h>
#include <gmime/gmime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_json(GString *o, const char *s)
{
	if (!s) {
		g_string_append(o, "null");
		return;
	}
	g_string_append_c(o, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': g_string_append(o, "\\\""); break;
		case '\\': g_string_append(o, "\\\\"); break;
		case '\n': g_string_append(o, "\\n"); break;
		case '\r': g_string_append(o, "\\r"); break;
		case '\t': g_string_append(o, "\\t"); break;
		default:
			if (*p < 0x20)
				g_string_append_printf(o, "\\u%04x", *p);
			else
				g_string_append_c(o, (char)*p);
		}
	}
	g_string_append_c(o, '"');
}

struct walk {
	GMimeTextPart *plain, *html;
	GString *atts;
	int natt;
};

static void visit(GMimeObject *parent, GMimeObject *part, gpointer data)
{
	struct walk *w = data;
	(void)parent;
	if (!GMIME_IS_PART(part))
		return;
	GMimePart *p = GMIME_PART(part);
	if (g_mime_part_is_attachment(p)) {
		if (w->natt++)
			g_string_append_c(w->atts, ',');
		put_json(w->atts, g_mime_part_get_filename(p));
		return;
	}
	if (GMIME_IS_TEXT_PART(part)) {
		GMimeContentType *ct = g_mime_object_get_content_type(part);
		if (!w->plain && g_mime_content_type_is_type(ct, "text", "plain"))
			w->plain = GMIME_TEXT_PART(part);
		else if (!w->html && g_mime_content_type_is_type(ct, "text", "html"))
			w->html = GMIME_TEXT_PART(part);
	}
}

static void addrs(GString *o, const char *key, InternetAddressList *l)
{
	g_string_append_printf(o, ",\"%s\":", key);
	char *s = l ? internet_address_list_to_string(l, NULL, FALSE) : NULL;
	put_json(o, s);
	g_free(s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fputs("usage: gmime_parse LIST\n", stderr);
		return 2;
	}
	g_mime_init();
	FILE *lf = fopen(argv[1], "r");
	if (!lf) {
		perror(argv[1]);
		return 1;
	}
	char *name = NULL, *buf = NULL;
	size_t cap = 0, bufcap = 0;
	ssize_t len;
	GString *o = g_string_sized_new(1 << 20);
	GString *atts = g_string_new(NULL);
	while ((len = getline(&name, &cap, lf)) > 0) {
		if (name[len - 1] == '\n')
			name[--len] = 0;
		if (!len)
			continue;
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		struct stat st;
		size_t got = 0;
		if (fd >= 0 && fstat(fd, &st) == 0) {
			if ((size_t)st.st_size + 1 > bufcap) {
				free(buf);
				bufcap = (size_t)st.st_size + 1;
				buf = malloc(bufcap);
			}
			ssize_t r;
			while (got < bufcap && (r = read(fd, buf + got, bufcap - got)) > 0)
				got += (size_t)r;
		}
		if (fd >= 0)
			close(fd);
		GMimeStream *stream = g_mime_stream_mem_new_with_buffer(buf ? buf : "", got);
		GMimeParser *parser = g_mime_parser_new_with_stream(stream);
		GMimeMessage *m = g_mime_parser_construct_message(parser, NULL);
		if (!m) {
			g_string_append(o, "{\"error\":\"not a message\"}\n");
		} else {
			g_string_append(o, "{\"message_id\":");
			put_json(o, g_mime_message_get_message_id(m));
			addrs(o, "from", g_mime_message_get_from(m));
			addrs(o, "to", g_mime_message_get_to(m));
			g_string_append(o, ",\"subject\":");
			put_json(o, g_mime_message_get_subject(m));
			g_string_append(o, ",\"date\":");
			GDateTime *d = g_mime_message_get_date(m);
			if (d) {
				GDateTime *u = g_date_time_to_utc(d);
				char *iso = u ? g_date_time_format(u, "%Y-%m-%dT%H:%M:%SZ") : NULL;
				put_json(o, iso);
				g_free(iso);
				if (u)
					g_date_time_unref(u);
			} else {
				g_string_append(o, "null");
			}
			struct walk w = { NULL, NULL, atts, 0 };
			g_string_truncate(atts, 0);
			g_mime_message_foreach(m, visit, &w);
			GMimeTextPart *t = w.plain ? w.plain : w.html;
			char *text = t ? g_mime_text_part_get_text(t) : NULL;
			g_string_append(o, ",\"text\":");
			put_json(o, text);
			g_free(text);
			g_string_append_printf(o, ",\"attachments\":[%s]}\n", atts->str);
			g_object_unref(m);
		}
		g_object_unref(parser);
		g_object_unref(stream);
		if (o->len > (1 << 20)) {
			fwrite(o->str, 1, o->len, stdout);
			g_string_truncate(o, 0);
		}
	}
	fwrite(o->str, 1, o->len, stdout);
	free(name);
	free(buf);
	g_string_free(o, TRUE);
	g_string_free(atts, TRUE);
	return 0;
}
