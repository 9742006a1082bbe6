/* SPDX-License-Identifier: MIT */
/* The unit tests' shared kit: see helpers.h. */
#include "helpers.h"
#include "mail/charset.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

char *t_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = NULL;
	int n = vasprintf(&p, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	return p;
}

char *t_tmpdir(const char *tag)
{
	const char *tmp = getenv("TMPDIR");
	char *tmpl = t_asprintf("%s/ingest-%s-XXXXXX", tmp && *tmp ? tmp : P_tmpdir, tag);
	assert_non_null(mkdtemp(tmpl));
	assert_int_equal(chmod(tmpl, 0755), 0);
	return tmpl;
}

static void rmtree_at(int dirfd, const char *name)
{
	fchmodat(dirfd, name, 0700, 0);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		unlinkat(dirfd, name, 0);
		return;
	}
	DIR *d = fdopendir(fd);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR)
			rmtree_at(fd, de->d_name);
		else
			unlinkat(fd, de->d_name, 0);
	}
	closedir(d);
	assert_int_equal(unlinkat(dirfd, name, AT_REMOVEDIR), 0);
}

void t_rmtree(char *base)
{
	rmtree_at(AT_FDCWD, base);
	free(base);
}

void t_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		assert_true(k > 0);
		c += k;
		n -= (size_t)k;
	}
}

void t_put(const char *base, const char *rel, const void *p, size_t n)
{
	char *path = t_asprintf("%s/%s", base, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	t_write_all(fd, p, n);
	close(fd);
	free(path);
}

void t_put_text(const char *base, const char *rel, const char *text)
{
	t_put(base, rel, text, strlen(text));
}

void t_mkdirs(const char *base, const char *const *rel)
{
	for (; *rel; rel++) {
		char *p = t_asprintf("%s/%s", base, *rel);
		assert_int_equal(mkdir(p, 0755), 0);
		free(p);
	}
}

uint64_t t_ino_of(const char *base, const char *rel)
{
	char *p = t_asprintf("%s/%s", base, rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	free(p);
	return st.st_ino;
}

void t_mail_ctx_init(struct mail_ctx *ctx)
{
	arena_init(&ctx->arena, 0);
	dynbuf_init(&ctx->scratch, 0);
	ctx->charsets = charset_cache_new();
	ctx->sniff = NULL;
}

void t_mail_ctx_release(struct mail_ctx *ctx)
{
	charset_cache_free(ctx->charsets);
	dynbuf_release(&ctx->scratch);
	arena_release(&ctx->arena);
}

int t_ctx_case_setup(void **state, size_t size)
{
	struct mail_ctx *ctx = calloc(1, size);
	if (!ctx)
		return -1;
	t_mail_ctx_init(ctx);
	*state = ctx;
	return ctx->charsets ? 0 : -1;
}

int t_ctx_case_teardown(void **state)
{
	struct mail_ctx *ctx = *state;
	t_mail_ctx_release(ctx);
	free(ctx);
	return 0;
}

int t_arena_case_setup(void **state, size_t size)
{
	struct arena *a = calloc(1, size);
	if (!a)
		return -1;
	arena_init(a, 0);
	*state = a;
	return 0;
}

int t_arena_case_teardown(void **state)
{
	struct arena *a = *state;
	arena_release(a);
	free(a);
	return 0;
}

int t_become_unprivileged(void)
{
	if (geteuid() != 0)
		return 0;
	struct passwd *pw = getpwnam("nobody");
	uid_t uid = pw ? pw->pw_uid : 65534;
	gid_t gid = pw ? pw->pw_gid : 65534;
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -1;
	return 0;
}

void t_assert_str(struct str s, const char *want)
{
	if (!want) {
		assert_null(s.p);
		return;
	}
	assert_non_null(s.p);
	char *got = strndup(s.p, s.n);
	assert_string_equal(got, want);
	free(got);
}
