/* SPDX-License-Identifier: MIT */
/* `ingest search` queries: any bytes as a QUERY (up to the first NUL; the
 * first byte picks JSON or TSV and a limit of 1 to 8) against a small
 * index end in hits, at most the limit, or in -EINVAL with a reason, never
 * a crash.  The words become
 * an FTS5 expression and SQL conditions (src/index/search.c), and whatever
 * expression they make is ranked by src/index/rank.c.  The index is built
 * once per process, from four messages, in a temporary directory. */
#include "fuzz.h"
#include "ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const fuzz_messages[] = {
	"From: Ann Example <ann@example.org>\nTo: bob@example.net\nSubject: Q3 report\n"
	"Date: Tue, 06 Jun 2023 10:00:00 +0000\nMessage-ID: <1@example.org>\n\n"
	"The quarterly report and the budget are attached below.\n",
	"From: Bob <bob@example.net>\nTo: Ann Example <ann@example.org>\nSubject: Re: Q3 report\n"
	"Date: Wed, 07 Jun 2023 11:00:00 +0000\nMessage-ID: <2@example.net>\nIn-Reply-To: <1@example.org>\n\n"
	"Thanks, the report reads well; the budget needs a second look.\n",
	"From: carl@example.com\nTo: team@example.org\nSubject: Lunch\n"
	"Date: Fri, 01 Dec 2023 12:00:00 +0000\nMessage-ID: <3@example.com>\n"
	"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
	"--b\nContent-Type: text/plain\n\nPizza near the station?\n"
	"--b\nContent-Type: application/pdf; name=menu.pdf\nContent-Transfer-Encoding: base64\n\n"
	"JVBERi0xLjQK\n--b--\n",
	"From: =?UTF-8?Q?Ren=C3=A9e?= <renee@example.fr>\nSubject: =?UTF-8?Q?R=C3=A9sum=C3=A9?=\n"
	"Date: Mon, 01 Jan 2024 09:00:00 +0100\n\nVoilà mon résumé, et le rapport.\n",
};

static char fuzz_dir[64], fuzz_db[96];
static int fuzz_null = -1;

static int fuzz_remove(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, fuzz_remove, 8, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_index(void)
{
	strcpy(fuzz_dir, "/tmp/ingest-fuzz-search-XXXXXX");
	FUZZ_CHECK(mkdtemp(fuzz_dir));
	atexit(fuzz_cleanup);
	char path[160];
	snprintf(path, sizeof(path), "%s/Maildir", fuzz_dir);
	FUZZ_CHECK(mkdir(path, 0700) == 0);
	for (const char *sub = "tmp\0new\0cur\0"; *sub; sub += strlen(sub) + 1) {
		snprintf(path, sizeof(path), "%s/Maildir/%s", fuzz_dir, sub);
		FUZZ_CHECK(mkdir(path, 0700) == 0);
	}
	for (size_t i = 0; i < sizeof(fuzz_messages) / sizeof(fuzz_messages[0]); i++) {
		snprintf(path, sizeof(path), "%s/Maildir/cur/%zu.fuzz:2,%s", fuzz_dir, i, i ? "S" : "FS");
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		FUZZ_CHECK(fd >= 0);
		size_t n = strlen(fuzz_messages[i]);
		FUZZ_CHECK(write(fd, fuzz_messages[i], n) == (ssize_t)n);
		close(fd);
	}
	snprintf(fuzz_db, sizeof(fuzz_db), "%s/mail.db", fuzz_dir);
	snprintf(path, sizeof(path), "%s/Maildir", fuzz_dir);
	struct ingest_options *o = ingest_options_new();
	FUZZ_CHECK(o);
	FUZZ_CHECK(ingest_options_set(o, "index", fuzz_db) == 0);
	FUZZ_CHECK(ingest_options_add_path(o, path) == 0);
	struct ingest_report *rep = NULL;
	FUZZ_CHECK(ingest_run(o, &rep) == 0);
	FUZZ_CHECK(ingest_report_error_records(rep) == 0);
	ingest_report_free(rep);
	ingest_options_free(o);
	fuzz_null = open("/dev/null", O_WRONLY);
	FUZZ_CHECK(fuzz_null >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_null < 0)
		fuzz_index();
	if (size == 0)
		return 0;
	/* the format, the order and the count; both orders at once is a
	 * refusal */
	int flags = data[0] & (INGEST_SEARCH_TSV | INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST |
	                       INGEST_SEARCH_COUNT);
	char *query = malloc(size);
	FUZZ_CHECK(query);
	memcpy(query, data + 1, size - 1);
	query[size - 1] = '\0';
	char *why = NULL;
	unsigned long limit = 1 + (data[0] >> 4) % 8;
	int r = ingest_search(fuzz_db, query, flags, limit, fuzz_null, &why);
	FUZZ_CHECK(r >= 0 ? ((flags & INGEST_SEARCH_COUNT) || r <= (int)limit) && !why
	                  : r == -EINVAL || r == -ENOMEM);
	FUZZ_CHECK(r != -EINVAL || why);
	free(why);
	free(query);
	return 0;
}
