"""scripts/snapshot_store.sh, the way a device call's resume tarball is made and used: a copy of a
store that is still being written (rows in its write-ahead log included) comes back with its seal
key, and a fresh machine that unpacks it answers the same evaluation from it; the same copy
without its key trusts none of its rows. Stopped while copying, the periodic copier ends only
when that copy is whole, leaving nothing behind that still writes.

Run by ctest (scripts.SnapshotStore) with CUDAL1_BINARY set to the cudal1 under test.
"""
import json
import os
import sqlite3
import subprocess
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SNAPSHOT = os.path.join(HERE, "snapshot_store.sh")


def evaluate(db):
    """One CPU evaluation of a fixture pair against the store `db`: (its JSON, stderr)."""
    run = subprocess.run(
        [os.environ["CUDAL1_BINARY"], "eval", "--task", os.path.join(FIXTURES, "tasks", "scale_add.py"),
         "--candidate", os.path.join(FIXTURES, "candidates", "ok_scale_add_alpha.py"), "--device", "cpu",
         "--no-timing", "--db", db, "--json"],
        capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"cudal1 eval failed ({run.returncode}): {run.stderr}")
    return json.loads(run.stdout), run.stderr


class SnapshotStore(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "state")
        os.makedirs(self.dir)
        self.db = os.path.join(self.dir, "results.db")

    def tearDown(self):
        self.tmp.cleanup()

    def unpacked(self, tarball, keep_key=True):
        where = tempfile.mkdtemp(dir=self.tmp.name)
        with tarfile.open(tarball) as t:
            t.extractall(where)
        if not keep_key:
            os.remove(os.path.join(where, "results.db.key"))
        return os.path.join(where, "results.db")

    def test_a_copy_of_a_live_store_with_its_key_answers_on_another_machine(self):
        first, _ = evaluate(self.db)
        self.assertTrue(first["accepted"], first)
        self.assertFalse(first.get("from_store"), first)
        # A writer still holding the store, its last row only in the write-ahead log: `cp` of the
        # database file alone would lose it.
        live = sqlite3.connect(self.db)
        live.execute("PRAGMA wal_autocheckpoint=0")
        live.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('snapshot-test', 'in the log')")
        live.commit()
        self.assertTrue(os.path.getsize(self.db + "-wal") > 0)
        tarball = os.path.join(self.tmp.name, "bench_state.tgz")
        subprocess.run(["bash", SNAPSHOT, self.dir, tarball], check=True, timeout=120)
        live.close()

        restored = self.unpacked(tarball)
        self.assertEqual(os.stat(restored).st_mode & 0o077, 0, "the copy must stay private")
        got = sqlite3.connect(restored).execute("SELECT value FROM meta WHERE key = 'snapshot-test'").fetchone()
        self.assertEqual(got, ("in the log",))
        again, _ = evaluate(restored)
        self.assertTrue(again.get("from_store"), "the restored store did not answer: " + json.dumps(again)[:400])

        # The same copy without its key: every row is distrusted and the evaluation runs again.
        keyless = self.unpacked(tarball, keep_key=False)
        fresh, err = evaluate(keyless)
        self.assertFalse(fresh.get("from_store"), fresh)
        self.assertIn("seal does not match", err)
        self.assertIn("A copy of a store needs its key copied beside it", err)

    def test_stopped_mid_copy_it_finishes_that_copy_before_it_ends(self):
        with open(os.path.join(self.dir, "results.db.key"), "w") as f:
            f.write("k")
        # A tar that says when it starts and then takes its time: the TERM lands mid-copy.
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.makedirs(bin_dir)
        started = os.path.join(self.tmp.name, "tar-started")
        real_tar = subprocess.run(["bash", "-c", "command -v tar"], capture_output=True, text=True).stdout.strip()
        with open(os.path.join(bin_dir, "tar"), "w") as f:
            f.write(f'#!/bin/sh\ntouch "{started}"\nsleep 2\nexec "{real_tar}" "$@"\n')
        os.chmod(os.path.join(bin_dir, "tar"), 0o755)
        tarball = os.path.join(self.tmp.name, "state.tgz")
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        copier = subprocess.Popen(["bash", SNAPSHOT, self.dir, tarball, "0.2"], env=env)
        deadline = time.monotonic() + 60
        while not os.path.exists(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(started), "no copy started")
        copier.terminate()
        self.assertEqual(copier.wait(timeout=60), 0)
        # Once it has ended, its copy is whole and nothing of it writes any more.
        self.assertTrue(os.path.exists(tarball), "the copy in hand was abandoned")
        self.assertFalse(os.path.exists(tarball + ".part"))
        with tarfile.open(tarball) as t:
            self.assertIn("./results.db.key", t.getnames())


if __name__ == "__main__":
    unittest.main()
