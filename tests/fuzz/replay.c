/* SPDX-License-Identifier: MIT */
/* Replays fuzz corpora without libFuzzer: every regular file of the
 * directories (or the files) named on the command line goes once through
 * LLVMFuzzerTestOneInput(), in name order.  Linked with each target in
 * normal builds (gcc included), so the seed corpora and the regression
 * inputs are ordinary tests there, sanitizers or not.
 *
 * Exit status: 0 when every input ran (a target that finds a bug aborts);
 * 1 when an argument cannot be read or names no input at all, so a
 * misplaced corpus fails loudly instead of passing with nothing run. */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

/* The input being run, named by the handler when a check or a sanitizer
 * aborts (or the process faults), so the failing file is in the test log. */
static const char *volatile current;

static void replay_crashed(int sig)
{
	static const char msg[] = "replay: crashed on input '";
	const char *c = current;
	if (c) {
		(void)!write(2, msg, sizeof(msg) - 1);
		(void)!write(2, c, strlen(c));
		(void)!write(2, "'\n", 2);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int replay_file(int dirfd, const char *name, const char *shown)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", shown, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	size_t size = (size_t)st.st_size, got = 0;
	/* Exact size: the target copies it again, but a bug in this file
	 * should not hide behind slack either. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf) {
		close(fd);
		fprintf(stderr, "replay: '%s': out of memory\n", shown);
		return -1;
	}
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "replay: cannot read '%s': %s\n", shown,
			        r < 0 ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	current = shown;
	LLVMFuzzerTestOneInput(buf, size);
	current = NULL;
	free(buf);
	return 1;
}

static int skip_dotfiles(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	size_t total = 0;
	int status = 0;

	signal(SIGABRT, replay_crashed);
	signal(SIGSEGV, replay_crashed);
	signal(SIGBUS, replay_crashed);
	signal(SIGFPE, replay_crashed);
	signal(SIGILL, replay_crashed);
	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		size_t ran = 0;
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: cannot stat '%s': %s\n", argv[i], strerror(errno));
			status = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			int r = replay_file(AT_FDCWD, argv[i], argv[i]);
			if (r < 0)
				status = 1;
			ran = r > 0;
		} else {
			struct dirent **names;
			int dirfd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			int n = dirfd < 0 ? -1 : scandir(argv[i], &names, skip_dotfiles, alphasort);
			if (n < 0) {
				fprintf(stderr, "replay: cannot list '%s': %s\n", argv[i], strerror(errno));
				if (dirfd >= 0)
					close(dirfd);
				status = 1;
				continue;
			}
			for (int j = 0; j < n; j++) {
				char shown[4096];
				snprintf(shown, sizeof(shown), "%s/%s", argv[i], names[j]->d_name);
				int r = replay_file(dirfd, names[j]->d_name, shown);
				if (r < 0)
					status = 1;
				else
					ran += (size_t)r;
				free(names[j]);
			}
			free(names);
			close(dirfd);
		}
		if (ran == 0) {
			fprintf(stderr, "replay: no input in '%s'\n", argv[i]);
			status = 1;
		}
		printf("%s: %zu inputs\n", argv[i], ran);
		total += ran;
	}
	printf("%zu inputs replayed\n", total);
	return status;
}
