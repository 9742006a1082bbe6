# SPDX-License-Identifier: MIT
"""A mail client at work on a Maildir while a run reads it, for the tests
of runs during changes (tests/cli/test_index.py, tests/identity)."""
import os
import shutil
import threading
import time


class Churn:
    """While the `with` block runs, a thread picks a message of `dirs` (cur/
    and new/ directories) at random, again and again, and renames it (new
    flags; into another folder's cur/), deletes it, copies it under the
    unique name copy_name() gives (a new one each call, across rounds
    too), or rewrites it in place with rewrite(old bytes) and an mtime 2 s
    later (whatever the file system's clock granularity, the change
    shows)."""

    def __init__(self, dirs, rng, copy_name, rewrite):
        self.dirs, self.rng, self.copy_name, self.rewrite = dirs, rng, copy_name, rewrite
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.work)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def work(self):
        r = self.rng
        while not self.stop.is_set():
            sub = r.choice(self.dirs)
            names = os.listdir(sub)
            if not names:
                continue
            name = r.choice(names)
            path, base, op = os.path.join(sub, name), name.split(":2,")[0], r.randrange(5)
            try:
                if op == 0:
                    os.rename(path, os.path.join(os.path.dirname(sub), "cur",
                                                 base + ":2," + r.choice(("S", "RS", "FS", ""))))
                elif op == 1:
                    os.rename(path, os.path.join(os.path.dirname(r.choice(self.dirs)), "cur", base + ":2,S"))
                elif op == 2:
                    os.unlink(path)
                elif op == 3:
                    shutil.copyfile(path, os.path.join(r.choice(self.dirs), self.copy_name()))
                else:
                    st = os.stat(path)
                    with open(path, "rb") as f:
                        data = f.read()
                    with open(path, "wb") as f:
                        f.write(self.rewrite(data))
                    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
            except FileNotFoundError:
                pass   # listed, then renamed or deleted by an earlier step
            time.sleep(0.0005)
