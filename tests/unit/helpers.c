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
#include <sys/wait.h>
#include <time.h>
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

char *t_fork_output(int (*fn)(void *arg, int out), void *arg, bool unprivileged, int *status,
                    size_t *n)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		if (unprivileged && t_become_unprivileged() < 0)
			_exit(77);
		_exit(fn(arg, fds[1]));
	}
	close(fds[1]);
	size_t len = 0, cap = 4096;
	char *text = malloc(cap);
	assert_non_null(text);
	for (ssize_t k; (k = read(fds[0], text + len, cap - len - 1)) > 0;) {
		len += (size_t)k;
		if (cap - len - 1 == 0) {
			text = realloc(text, cap *= 2);
			assert_non_null(text);
		}
	}
	text[len] = '\0';
	close(fds[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (n)
		*n = len;
	return text;
}

char *t_read_file(const char *base, const char *rel, size_t *n)
{
	char *path = rel ? t_asprintf("%s/%s", base, rel) : strdup(base);
	assert_non_null(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	char *p = malloc((size_t)st.st_size + 1);
	assert_non_null(p);
	size_t got = 0;
	for (ssize_t k; got < (size_t)st.st_size && (k = read(fd, p + got, (size_t)st.st_size - got)) > 0;)
		got += (size_t)k;
	close(fd);
	assert_int_equal(got, (size_t)st.st_size);
	p[got] = '\0';
	if (n)
		*n = got;
	return p;
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

double t_cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double t_cost_ratio(const char *what, double (*cost)(void *arg, int larger), void *arg, int rounds,
                    int attempts, double limit, double t[2])
{
	double ratio = 0;
	for (int attempt = 0; attempt < attempts; attempt++) {
		t[0] = t[1] = 1e9;
		for (int r = 0; r < rounds; r++)
			for (int k = 0; k < 2; k++) {
				double c = cost(arg, k);
				t[k] = c < t[k] ? c : t[k];
			}
		ratio = t[1] / (t[0] > 1e-6 ? t[0] : 1e-6);
		print_message("%s: %.2f ms, then %.2f ms, ratio %.2f\n", what, t[0] * 1e3, t[1] * 1e3, ratio);
		if (ratio < limit)
			break;
	}
	return ratio;
}
