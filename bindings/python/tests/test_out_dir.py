"""A Session in a folder the CLI trained: it starts a run of its own (metrics.jsonl run ids,
docs/FORMATS.md section 5) beside the CLI's, says so in its log, and `trainrt report` still
shows the CLI run's steps; a load continues the CLI run."""
from __future__ import annotations

import os
import re
import subprocess
import unittest
from typing import List

import trainrt

from _support import TestCase, config, config_path, env, scratch


def run_cli(*args: str) -> str:
    done = subprocess.run([env("TRAINRT_CLI")] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    if done.returncode != 0:
        raise AssertionError("trainrt %s: exit %d\n%s" % (" ".join(args), done.returncode,
                                                         done.stdout))
    return done.stdout


def summary_of(report: str, heading: str) -> str:
    """The lines of one run's block in `trainrt report`'s summary."""
    blocks = re.split(r"^(?===)", report, flags=re.M)
    for b in blocks:
        if b.startswith("== " + heading + " ("):
            return b
    raise AssertionError("no run %r in the report:\n%s" % (heading, report))


class OutDirTest(TestCase):
    def test_session_beside_a_cli_run_keeps_its_history(self) -> None:
        out = os.path.join(scratch("py-outdir-"), "out")
        run_cli("train", config_path(), "--set", "train.out_dir=" + out, "--set",
                "train.checkpoint_every=2", "--steps", "4")

        logs: List[str] = []
        with config(train__out_dir=out) as cfg:
            s = trainrt.Session(cfg)
        with s:
            s.set_log(lambda level, msg: logs.append(msg), trainrt.LogLevel.INFO)
            self.assertFalse(s.train(3))  # a fresh session: steps 1 to 3 of its own run
            self.assertEqual(s.sync().step, 3)
        appending = [m for m in logs if m.startswith("metrics: appending a new run (")]
        self.assertEqual(len(appending), 1, logs)
        self.assertIn("earlier runs are kept; load a checkpoint to continue one", appending[0])

        report = run_cli("report", out)
        cli_run = summary_of(report, "out run 1")
        self.assertRegex(cli_run, r"(?m)^  steps +4 \(4 logged; 0 resumes, 0 lines replaced, "
                                  r"0 dropped, 0 malformed\)$")
        self.assertRegex(summary_of(report, "out run 2"), r"(?m)^  steps +3 \(3 logged; ")

        # A load continues the CLI run (its checkpoint names it), replacing only its own steps.
        with config(train__out_dir=out) as cfg:
            s = trainrt.Session(cfg)
        with s:
            s.load(os.path.join(out, "step_00000002"))
            self.assertFalse(s.train(3))
        report = run_cli("report", out)
        self.assertRegex(summary_of(report, "out run 1"),
                         r"(?m)^  steps +5 \(5 logged; 1 resume, 2 lines replaced, 0 dropped")
        self.assertRegex(summary_of(report, "out run 2"), r"(?m)^  steps +3 \(3 logged; ")


if __name__ == "__main__":
    unittest.main()
