/* SPDX-License-Identifier: MIT */
/* naive_read: the baseline a user would write by hand.  For every path in
 * LIST (one per line, or NUL-separated with -0): open, fstat, read the whole
 * file (size + 1 bytes, one read when it fits), close.  Prints
 * "files N bytes B errors E" on stdout so that the harness can verify it.
 *
 * naive_read --stat-only LIST: one stat of every path and nothing else, the
 * floor of a re-run that must look at every file to find what changed (the
 * index benchmark's reference); "bytes" is then the sum of the sizes.
 *
 * naive_read --memcpy BYTES: the harness's machine control: copies BYTES
 * through a 16 MiB buffer (nothing to do with files or ingest), so its drift
 * across rounds is the machine's own noise. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int memcpy_control(unsigned long long total)
{
	size_t chunk = 16u << 20;
	char *a = malloc(chunk), *b = malloc(chunk);
	if (!a || !b)
		return 1;
	memset(a, 1, chunk);
	memset(b, 2, chunk);
	unsigned long long done = 0, sum = 0;
	while (done < total) {
		size_t n = total - done < chunk ? (size_t)(total - done) : chunk;
		memcpy(b, a, n);
		sum += (unsigned char)b[n / 2];
		a[n / 3]++;
		done += n;
	}
	printf("files 0 bytes %llu errors 0 sum %llu\n", done, sum);
	return 0;
}

int main(int argc, char **argv)
{
	int sep = '\n', stat_only = 0;
	const char *list = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-0"))
			sep = 0;
		else if (!strcmp(argv[i], "--stat-only"))
			stat_only = 1;
		else if (!strcmp(argv[i], "--memcpy") && i + 1 < argc)
			return memcpy_control(strtoull(argv[++i], NULL, 10));
		else
			list = argv[i];
	}
	if (!list) {
		fputs("usage: naive_read [-0] [--stat-only] LIST | naive_read --memcpy BYTES\n", stderr);
		return 2;
	}
	FILE *lf = strcmp(list, "-") ? fopen(list, "r") : stdin;
	if (!lf) {
		perror(list);
		return 1;
	}
	char *name = NULL, *buf = NULL;
	size_t cap = 0, bufcap = 0;
	unsigned long long files = 0, bytes = 0, errors = 0;
	ssize_t len;
	while ((len = getdelim(&name, &cap, sep, lf)) > 0) {
		if (name[len - 1] == sep)
			name[--len] = 0;
		if (!len)
			continue;
		files++;
		struct stat st;
		if (stat_only) {
			if (stat(name, &st) < 0)
				errors++;
			else
				bytes += (unsigned long long)st.st_size;
			continue;
		}
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			errors++;
			if (fd >= 0)
				close(fd);
			continue;
		}
		size_t want = (size_t)st.st_size + 1;
		if (want > bufcap) {
			free(buf);
			bufcap = want < 65536 ? 65536 : want;
			buf = malloc(bufcap);
			if (!buf)
				return 1;
		}
		size_t got = 0;
		for (;;) {
			ssize_t r = read(fd, buf + got, want - got);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				errors++;
				break;
			}
			got += (size_t)r;
			if (r == 0 || got < want)
				break;
			/* the file grew: keep reading into a larger buffer */
			bufcap *= 2;
			char *nb = realloc(buf, bufcap);
			if (!nb)
				return 1;
			buf = nb;
			want = bufcap;
		}
		bytes += got;
		close(fd);
	}
	printf("files %llu bytes %llu errors %llu\n", files, bytes, errors);
	free(name);
	free(buf);
	return 0;
}
