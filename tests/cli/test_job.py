"""torchscope-cli record, probe and sae train as one job of several ranks on the CPU, with Gloo over the
loopback address. The ranks are started here with the environment torchrun gives them (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE), meeting at a store
this process serves as torchrun's agent does, and once by the environment's own torchrun as the
docs/distributed.md gives it. The oracle is the same command in one process: merged statistics, histograms,
top-k and kept samples must equal it; a probe trained by a job must also be the one PyTorch trains
on forward hooks' features (tests/fixtures/probe_reference.py).

Waits are for events (a process ends, a line shows in its output), never for a time; the limits
only stop a hung test. Ports come from the OS (a store bound to port 0, torchrun --standalone).
Under CI=true a missing capability (Gloo in the build, torchrun) fails instead of skipping."""
import datetime
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import torch

CLI = os.environ["TORCHSCOPE_CLI"]
FIXTURES = pathlib.Path(os.environ["TORCHSCOPE_FIXTURES_DIR"])
HEADLESS = os.environ.get("TORCHSCOPE_IMAGING", "1") not in ("1", "ON", "TRUE", "true")
DISTRIBUTED = os.environ.get("TORCHSCOPE_DISTRIBUTED", "1") in ("1", "ON", "TRUE", "true")
FASHION = pathlib.Path(__file__).resolve().parents[2] / "resources" / "demo" / "fashion_cnn.pt"
TIMEOUT = 600  # only against a hang: the sanitized CLI is several times slower
TORCHRUN = pathlib.Path(sys.executable).parent / "torchrun"  # the environment's, beside its python

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
import probe_reference  # noqa: E402  (probes trained by PyTorch's nn.Linear and Adam)
from demo_hooks import demo_hooked  # noqa: E402  (forward hooks on the eager demo model)
NEVER = "86400"  # --job-timeout: a day, so that only an event, never the timeout, can end a wait


def require(present, what):
    """A capability these tests need. Missing, it fails under CI=true (where a lost feature must
    not pass unseen as skipped tests) and skips elsewhere, saying what is missing."""
    if present:
        return
    if os.environ.get("CI") == "true":
        raise AssertionError(f"missing under CI=true: {what}")
    raise unittest.SkipTest(f"missing: {what}")


class Rendezvous:
    """The store the ranks of one job meet at, served by this process as torchrun's agent serves
    it (TORCHELASTIC_USE_AGENT_STORE=True: every rank joins as a client). It binds port 0, so the
    OS picks a free port, and holds it until the job is done: no other process can take it."""

    def __init__(self):
        from torch.distributed import TCPStore
        self.store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                              timeout=datetime.timedelta(seconds=TIMEOUT))

    def environment(self, rank, ranks):
        return dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank),
                    LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(self.store.port),
                    TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")


class Rank:
    """One process of a job; its output goes to files, so a test can watch its progress."""

    def __init__(self, command, env, folder, rank, rendezvous):
        self.out, self.err = folder / f"rank{rank}.out", folder / f"rank{rank}.err"
        self.rendezvous = rendezvous  # served as long as a rank may need it
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)

    def wait_for(self, text, timeout=TIMEOUT):
        """Until `text` shows in its stderr (its progress, say); the rank ending first fails."""
        deadline = time.monotonic() + timeout
        while text not in self.err.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"'{text}' never came: {self.err.read_text()}")
            time.sleep(0.05)


def start(folder, ranks, args, rank_args=None):
    """Starts `ranks` processes of one job; rank_args(rank) may give a rank arguments of its own."""
    rendezvous = Rendezvous()
    return [Rank([CLI, *map(str, rank_args(rank) if rank_args else args)], rendezvous.environment(rank, ranks),
                 folder, rank, rendezvous) for rank in range(ranks)]


def stop(ranks):
    """Kills whatever rank still runs (a failed test's cleanup)."""
    for r in ranks:
        if r.process.poll() is None:
            r.process.kill()
            r.process.wait()


def finish(ranks, timeout=TIMEOUT):
    """(return code, stdout, stderr) of every rank, once each has ended; one still running after
    `timeout` (a hang) fails the test."""
    deadline = time.monotonic() + timeout
    results = []
    for r in ranks:
        try:
            r.process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stop(ranks)
            raise AssertionError(f"a rank was still running after {timeout} s")
        results.append((r.process.returncode, r.out.read_text(), r.err.read_text()))
    return results


def one_process(args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)


def assert_same_recording(test, single, job):
    """Every key of a single-process recording in the job's: floats to 1e-6 relative to the largest
    value of the key (NaN fails), integers (counts, histograms, top-k samples) identical. The tests
    give both runs one thread per process, so that only the split and the merge differ."""
    test.assertEqual(list(single), list(job))
    for key, want in single.items():
        got = job[key]
        test.assertEqual(tuple(got.shape), tuple(want.shape), key)
        if want.dtype.is_floating_point:
            want64, got64 = want.double(), got.double()
            test.assertFalse(torch.isnan(got64).any().item(), key)
            scale = want64.abs().max().clamp_min(1e-30) if want.numel() else 1.0
            relative = ((got64 - want64).abs().max() / scale).item() if want.numel() else 0.0
            test.assertTrue(relative <= 1e-6, f"{key}: relative difference {relative}")
        else:
            test.assertTrue(torch.equal(got, want), key)


class CliJob(unittest.TestCase):

    def setUp(self):
        require(DISTRIBUTED, "c10d's Gloo in the build (TORCHSCOPE_DISTRIBUTED is OFF: install libgloo-dev and "
                             "configure again)")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)  # cleanups run last first: after every rank is stopped
        self.dir = pathlib.Path(self.tmp.name)
        self.images = FIXTURES / ("labelled_inputs.pt" if HEADLESS else "labelled")

    def start(self, ranks, args, rank_args=None):
        processes = start(self.dir, ranks, args, rank_args)
        self.addCleanup(stop, processes)  # no rank outlives its test
        return processes

    def record_both_ways(self, ranks, extra, name):
        single, job = self.dir / f"{name}_single.pt", self.dir / f"{name}_job.pt"
        args = ["record", FASHION, "--input", self.images, "--grab", "features.1", "--grab", "features.2.relu",
                "--grab", "classifier.2", "--batch", "4", "--threads", "1", *extra]
        result = one_process([*args, "--out", single])
        self.assertEqual(result.returncode, 0, result.stderr)
        outcomes = finish(self.start(ranks, [*args, "--out", job]))
        for rank, (code, out, err) in enumerate(outcomes):
            self.assertEqual(code, 0, f"rank {rank}: {err}")
        self.assertEqual(outcomes[1][1], "", "only rank 0 prints the summary")
        return (torch.load(single), json.loads(result.stdout)), (torch.load(job), json.loads(outcomes[0][1]))

    def test_statistics_histograms_and_top_k_equal_one_process(self):
        for ranks in (2, 3):
            with self.subTest(ranks=ranks):
                (single, single_summary), (job, job_summary) = self.record_both_ways(ranks, [], f"stats{ranks}")
                assert_same_recording(self, single, job)
                self.assertEqual(job_summary["images"], 36)
                # Top-k sample numbers name the same files.
                files = job_summary["image_files"]
                self.assertEqual(files, single_summary["image_files"])
                top = job["features.2.relu:top_samples"]
                self.assertEqual([files[i] for i in top[:, 5].tolist()],
                                 [single_summary["image_files"][i] for i in single["features.2.relu:top_samples"][:, 5].tolist()])
                print(f"{ranks} ranks: stats of {len(single)} keys equal one process; "
                      f"histogram of features.2.relu sums to {int(job['features.2.relu:histogram'].sum())}")

    def test_a_condition_whose_first_samples_come_late_takes_the_same_histogram_range(self):
        # true:0 (t-shirts, the last class folder) selects nothing in the first batches, so the range
        # comes from a later batch, on some rank.
        (single, _), (job, summary) = self.record_both_ways(3, ["--condition", "true:0"], "late")
        assert_same_recording(self, single, job)
        self.assertEqual(summary["selected"], int(single["features.1:samples"]))

    def test_kept_samples_and_the_other_reductions_equal_one_process(self):
        for reduce in ("none", "sum", "mean", "max", "min"):
            with self.subTest(reduce=reduce):
                (single, _), (job, _) = self.record_both_ways(3, ["--reduce", reduce], reduce)
                assert_same_recording(self, single, job)

    def test_probe_sweep_accuracy_equals_one_process(self):
        data = FIXTURES / ("probe_inputs.pt" if HEADLESS else "probe")
        args = ["probe", "sweep", FASHION, "--layer", "features.0", "--layer", "features.1", "--layer", "features.2",
                "--data", data, "--seed", "5", "--cache", "none", "--batch", "8", "--threads", "1"]
        single = one_process(args)
        self.assertEqual(single.returncode, 0, single.stderr)
        outcomes = finish(self.start(2, args))
        for rank, (code, _, err) in enumerate(outcomes):
            self.assertEqual(code, 0, f"rank {rank}: {err}")
        print("one process:\n" + single.stdout + "two ranks:\n" + outcomes[0][1])
        self.assertEqual(outcomes[0][1], single.stdout)
        self.assertEqual(outcomes[1][1], "")

    def test_probe_train_equals_one_process_and_pytorchs_probe(self):
        # The 120 probe images in two batches of 60, one per rank; rank 0 trains on the features
        # of both, in sample order, so the probe is one process's to the bit. (The images as the
        # fixture's tensor: the features below come from the same values.)
        data = FIXTURES / "probe_inputs.pt"
        args = ["probe", "train", FASHION, "--layer", "features.1", "--data", data, "--seed", "5", "--cache", "none",
                "--batch", "60", "--threads", "1", "--json"]
        single = one_process([*args, "--out", self.dir / "single.pt", "--state-dict", self.dir / "single_state.pt"])
        self.assertEqual(single.returncode, 0, single.stderr)
        outcomes = finish(self.start(2, [*args, "--out", self.dir / "job.pt", "--state-dict", self.dir / "job_state.pt"]))
        for rank, (code, _, err) in enumerate(outcomes):
            self.assertEqual(code, 0, f"rank {rank}: {err}")
        self.assertEqual(outcomes[1][1], "", "only rank 0 trains and reports")
        report, job_report = json.loads(single.stdout), json.loads(outcomes[0][1])
        self.assertEqual(job_report.pop("out"), str(self.dir / "job.pt"))
        report.pop("out")
        self.assertEqual(job_report, report)
        state, job_state = torch.load(self.dir / "single_state.pt"), torch.load(self.dir / "job_state.pt")
        self.assertEqual(list(job_state), list(state))
        for key, value in state.items():
            same = torch.equal(job_state[key], value) if isinstance(value, torch.Tensor) else job_state[key] == value
            self.assertTrue(same, key)
        # And the probe PyTorch trains (nn.Linear, Adam, the same seed) on the channel means of
        # forward hooks on the eager model, run in the CLI's batches of 60 on one thread: the
        # same features to the bit, so the same standardisation exactly, the same epochs, and
        # weights to float32 rounding (1e-6 of the largest, as test_probe_oracle.py measures: Adam's
        # first moment rounds differently in LibTorch and PyTorch).
        saved = torch.load(FIXTURES / "probe_inputs.pt")
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            features = demo_hooked(saved["samples"], ["features.1"], batch=60)["features.1"]
            expected = probe_reference.train_probe(probe_reference.pooled(features, "avg"), saved["labels"], seed=5)
        finally:
            torch.set_num_threads(threads)
        self.assertTrue(torch.equal(job_state["feature_mean"], expected["feature_mean"]))
        self.assertTrue(torch.equal(job_state["feature_std"], expected["feature_std"]))
        self.assertEqual((job_report["best_epoch"], job_report["epochs"]), (expected["best_epoch"], expected["epochs"]))
        weight, bias = expected["weights"][expected["best_epoch"]]
        scale = weight.abs().max().item()
        for name, got, want in (("weight", job_state["weight"], weight), ("bias", job_state["bias"], bias)):
            difference = (got.double() - want.double()).abs().max().item()
            self.assertLessEqual(difference, 1e-6 * scale, f"{name}: {difference}")  # NaN fails too
        self.assertEqual(job_report["validation_accuracy"], expected["validation_accuracy"])
        self.assertEqual(job_report["confusion"], expected["confusion"])
        print(f"probe train on 2 ranks: the one process's probe; {job_report['epochs']} epochs as PyTorch's, "
              f"weights within {(job_state['weight'] - weight).abs().max().item() / scale:.1e} of its largest")

    @unittest.skipIf(HEADLESS, "sae train reads image files")
    def test_sae_train_steps_together_and_rank_0_writes_the_sae(self):
        # 36 images in batches of 4: rank 0 takes batches 0, 2, ..., 8 (20 images), rank 1 the
        # other 4 (16). features.1 gives 49 vectors of 64 an image; each step is 32 vectors of each
        # rank. The buffers (64 steps' worth) never fill, so at the end every rank has its vectors
        # ready and the ranks take the steps both can: min(20 * 49 // 32, 16 * 49 // 32) = 24. (That
        # each step equals one process's on the two parts concatenated is SaeOverRanks.* in core.)
        out = self.dir / "saes"
        train = lambda batch, out, *extra: ["sae", "train", FASHION, "--layer", "features.1", "--images", self.images,
                                            "--expansion", 2, "--k", 4, "--batch", batch, "--batch-images", 4,
                                            "--threads", 1, *extra, "--out", out]
        outcomes = finish(self.start(2, train(64, out)))
        for rank, (code, _, err) in enumerate(outcomes):
            self.assertEqual(code, 0, f"rank {rank}: {err}")
        self.assertIn("trained on 2 ranks, 32 vectors of each step on each", outcomes[0][1])
        self.assertEqual(outcomes[1][1], "", "only rank 0 reports")
        run = json.loads((out / "training.json").read_text())
        self.assertEqual((run["images_done"], run["finished"]), (36, True))
        log = (out / "features.1" / "training_log.csv").read_text().splitlines()[1:]
        steps = min(20 * 49 // 32, 16 * 49 // 32)
        self.assertEqual(len(log), steps)
        self.assertEqual([int(line.split(",")[1]) for line in log], [64 * (i + 1) for i in range(steps)])
        fvu = [float(line.split(",")[5]) for line in log]
        self.assertTrue(all(0 <= f < 10 for f in fvu), fvu)  # finite, NaN fails
        cfg = json.loads((out / "features.1" / "cfg.json").read_text())
        self.assertEqual((cfg["d_in"], cfg["d_sae"], cfg["k"]), (64, 128, 4))
        # A batch that does not split over the ranks, and a cache, are refused on every rank.
        for args, message in ((train(63, self.dir / "refused"), "must split evenly over the 2 ranks"),
                              (train(64, self.dir / "refused", "--cache", self.dir / "cache"),
                               "a cache (--cache) is written by one process")):
            refused = finish(self.start(2, args))
            for rank, (code, _, err) in enumerate(refused):
                self.assertNotEqual(code, 0, f"rank {rank}")
                self.assertIn(message, err, f"rank {rank}")

    def test_a_rank_that_cannot_read_its_folder_fails_the_job_with_no_output(self):
        # No timeout can end this job (--job-timeout: a day): rank 0 stops when rank 1's failure reaches it.
        out = self.dir / "never.pt"
        missing = self.dir / "not_mounted_here"
        args = lambda rank: ["record", FASHION, "--input", missing if rank == 1 else self.images,
                             "--grab", "features.1", "--out", out, "--job-timeout", NEVER]
        started = time.monotonic()
        outcomes = finish(self.start(2, None, args))
        seconds = time.monotonic() - started
        for rank, (code, _, err) in enumerate(outcomes):
            self.assertNotEqual(code, 0, f"rank {rank} should fail")
            self.assertIn("not_mounted_here", err, f"rank {rank} names rank 1's problem")
        self.assertIn("rank 1 failed", outcomes[0][2])
        self.assertFalse(out.exists())
        print(f"a rank without its folder: every rank stopped after {seconds:.1f} s: {outcomes[0][2].strip()}")

    @unittest.skipIf(HEADLESS, "docs/distributed.md's command reads image files")
    def test_the_readmes_torchrun_command(self):
        # As docs/distributed.md gives it, with the environment's torchrun; --standalone: its agent serves
        # the rendezvous on a port the OS picks (its plain command takes 29500, which
        # another job on this machine may hold). Rank 0 writes the folder.
        require(TORCHRUN.exists(), f"torchrun beside {sys.executable} (scripts/python_env.sh installs it with torch)")
        root = pathlib.Path(__file__).resolve().parents[2]
        model, photos = root / "resources" / "face" / "face_expression.pt", root / "resources" / "face" / "photos"
        tail = ["--input", photos, "--batch", "2", "--grab", "features.dense0", "--grab", "features.dense3"]
        out = self.dir / "face_stats"
        result = subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node=2", "--no-python",
                                 CLI, "record", model, *map(str, tail), "--out", out],
                                capture_output=True, text=True, timeout=TIMEOUT, cwd=self.dir,
                                env=dict(os.environ, TMPDIR=str(self.dir)))  # torchrun's own files too
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("merged the recordings of 2 ranks", result.stderr)
        # torchrun's ranks share the 2 cores: one thread each, as the single process gets here.
        single = one_process(["record", model, *tail, "--threads", "1", "--out", self.dir / "face_single"])
        self.assertEqual(single.returncode, 0, single.stderr)
        for layer in ("features.dense0", "features.dense3"):
            assert_same_recording(self, torch.load(self.dir / "face_single" / f"{layer}.pt"),
                                  torch.load(out / f"{layer}.pt"))

    def long_input(self, rows):
        path = self.dir / "many.pt"
        generator = torch.Generator().manual_seed(0)
        torch.save(torch.rand(rows, 1, 28, 28, generator=generator), path)
        return path

    def test_a_killed_rank_stops_the_job_with_no_output(self):
        # No timeout can end this job (--job-timeout: a day): rank 0 stops when rank 1's
        # connections close, because the kernel closes them as it kills the process.
        out = self.dir / "never.pt"
        processes = self.start(2, ["record", FASHION, "--input", self.long_input(20000), "--grab",
                                   "features.2", "--batch", "2", "--out", out, "--job-timeout", NEVER])
        processes[0].wait_for(" samples")  # recording
        processes[1].process.kill()
        processes[1].process.wait()
        started = time.monotonic()
        code, _, err = finish(processes[:1])[0]
        seconds = time.monotonic() - started
        self.assertNotEqual(code, 0)
        self.assertIn("rank 0 lost contact with the job", err)
        why = err.split("or the exchange timed out): ", 1)[-1]
        self.assertIsNone(re.search(r"time[ds]? ?out", why, re.IGNORECASE), why)
        self.assertFalse(out.exists())
        print(f"rank 1 killed: rank 0 stopped {seconds:.1f} s later: {err.strip().splitlines()[-1]}")

    def test_a_rank_whose_partner_never_starts_gives_up_after_the_job_timeout(self):
        # Rank 1 of the world of 2 is never started: rank 0 waits --job-timeout seconds to be joined, then
        # fails, saying so, and writes nothing. The default (300 s) would wait five minutes.
        out = self.dir / "never.pt"
        rendezvous = Rendezvous()
        started = time.monotonic()
        alone = Rank([CLI, "record", str(FASHION), "--input", str(self.images), "--grab", "features.1", "--out",
                      str(out), "--job-timeout", "3"], rendezvous.environment(0, 2), self.dir, 0, rendezvous)
        self.addCleanup(stop, [alone])
        code, _, err = finish([alone])[0]
        seconds = time.monotonic() - started
        self.assertNotEqual(code, 0)
        self.assertIn("could not join the job", err)
        self.assertGreaterEqual(seconds, 3.0, "it gave up before its timeout")
        self.assertLess(seconds, 120.0, "it waited far past its timeout")
        self.assertFalse(out.exists())
        print(f"rank 1 never started: rank 0 gave up after {seconds:.1f} s: {err.strip().splitlines()[-1]}")

    def test_a_rank_that_stops_answering_ends_the_job_after_the_job_timeout(self):
        # Rank 1 is stopped (SIGSTOP), not killed: its connections stay open, so only the timeout can tell
        # rank 0 that it is gone. With --job-timeout 3 rank 0 fails within seconds of the missed exchange.
        out = self.dir / "never.pt"
        processes = self.start(2, ["record", FASHION, "--input", self.long_input(20000), "--grab", "features.2",
                                   "--batch", "2", "--out", out, "--job-timeout", "3"])
        processes[0].wait_for(" samples")  # recording
        processes[1].process.send_signal(signal.SIGSTOP)  # SIGKILL (the cleanup's) still ends it
        started = time.monotonic()
        code, _, err = finish(processes[:1])[0]
        seconds = time.monotonic() - started
        processes[1].process.kill()
        self.assertNotEqual(code, 0)
        self.assertIn("rank 0 lost contact with the job", err)
        self.assertLess(seconds, 120.0, "it waited far past its timeout")
        self.assertFalse(out.exists())
        print(f"rank 1 stopped: rank 0 gave up {seconds:.1f} s later: {err.strip().splitlines()[-1]}")

    def test_an_interrupted_job_writes_whole_steps_that_equal_one_process_on_them(self):
        many = self.long_input(20000)
        out = self.dir / "part.pt"
        args = ["record", FASHION, "--input", many, "--grab", "features.1", "--batch", "3", "--threads", "1",
                "--out", out]
        processes = self.start(2, args)
        processes[0].wait_for(" samples")  # recording
        for r in processes:
            r.process.send_signal(signal.SIGINT)  # as a terminal's Ctrl+C reaches every process of the job
        outcomes = finish(processes)
        for rank, (code, _, err) in enumerate(outcomes):
            self.assertEqual(code, 0, f"rank {rank}: {err}")
        summary = json.loads(outcomes[0][1])
        self.assertTrue(summary["cancelled"])
        recorded = summary["images"]
        self.assertGreater(recorded, 0)
        self.assertLess(recorded, 20000)
        self.assertEqual(recorded % 6, 0, "whole steps: 2 ranks x 3 samples each")
        self.assertIn("stopped on request", outcomes[0][2])
        # The first `recorded` rows in one process give the same recording.
        first = self.dir / "first.pt"
        torch.save(torch.load(many)[:recorded], first)
        single = self.dir / "single.pt"
        result = one_process([*args[:3], first, *args[4:-1], single])
        self.assertEqual(result.returncode, 0, result.stderr)
        assert_same_recording(self, torch.load(single), torch.load(out))
        print(f"interrupted: {recorded} of 20000 rows recorded by both ranks, equal to one process on them")


class CliJobEnvironment(unittest.TestCase):
    """torchrun's variables that do not make a job are refused before anything runs."""

    def run_with(self, out="/nonexistent/never.pt", **variables):
        env = {k: v for k, v in os.environ.items()
               if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
        env.update(variables)
        return subprocess.run([CLI, "record", FASHION, "--input", FIXTURES / "labelled_inputs.pt", "--grab",
                               "features.1", "--out", out],
                              capture_output=True, text=True, timeout=TIMEOUT, env=env)

    def test_wrong_variables_are_explained(self):
        cases = [({"WORLD_SIZE": "2", "RANK": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"},
                  "RANK='2' is not a whole number from 0 to 1"),
                 ({"WORLD_SIZE": "2", "RANK": "0", "MASTER_PORT": "29500"}, "MASTER_ADDR is not set"),
                 ({"WORLD_SIZE": "two", "RANK": "0"}, "WORLD_SIZE='two'"),
                 ({"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "RANK is not set"),
                 ({"WORLD_SIZE": "2", "RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "70000"},
                  "MASTER_PORT='70000'")]
        for variables, message in cases:
            with self.subTest(variables=variables):
                result = self.run_with(**variables)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn(message, result.stderr)

    def test_a_world_of_one_is_a_run_on_its_own(self):
        with tempfile.TemporaryDirectory() as folder:
            out = pathlib.Path(folder) / "alone.pt"
            result = self.run_with(out=out, WORLD_SIZE="1", RANK="0")  # no MASTER_ADDR: none is needed
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(int(torch.load(out)["features.1:samples"]), 36)


if __name__ == "__main__":
    unittest.main()
