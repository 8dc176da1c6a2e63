#!/usr/bin/env python3
"""scripts/bench-report on made-up run folders in the layout the rig's bench scenarios write.

Case 1 (a boot with a failed check): arms ideal and tierd of gups, tierd at 500 updates/s for 10 s
and then 950; RUN_DIR/checks holds one "ok - " and one "FAIL - " line. Exit 0 (data intact); the
JSON has tierd at 0.95x ideal, 90% of ideal from second 9 (the first 5-second window whose median
reaches 900), the arm's lines after first_line only, tierd's node 0 share the mean of its share
series over the last 30 s (ideal, without one: the last 5 s figure), and failed_checks naming the
failed check; the table lists it below itself.
Case 2 (every check passed, one arm's data not intact): failed_checks is [], the arm shows BAD
and the exit status is 1.
Runs in a temporary folder (bench-report writes build/bench/ under its working directory).
Exit 0 = pass, 1 = fail.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

FAILED = "[kernel-damon] DAMOS migrate_hot applied bytes (sz_applied 0)"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def arm(run_dir, name, rates, first_line=0, data_ok=True):
    warmup = "".join(f"t={i}s updates/s=1\n" for i in range(first_line))
    lines = "".join(f"t={first_line + i + 1}s updates/s={r}\n" for i, r in enumerate(rates))
    write(os.path.join(run_dir, f"gups-{name}.log"), "gups: start\n" + warmup + lines)
    write(
        os.path.join(run_dir, f"arm-{name}.env"),
        f"first_line={first_line}\nfast_access_pct=89.7\nmigrated_bytes=1048576\n"
        f"daemon_cpu_s=1.5\nkernel_threads_cpu_s=0.5\nworkload_sys_cpu_s=0.1\n"
        f"data_ok={'true' if data_ok else 'false'}\n",
    )


def report(script, cwd, run_dir):
    p = subprocess.run(
        [sys.executable, os.path.abspath(script), "gups", run_dir, "scripts/bench gups"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},  # no gnuplot: the report without plots
    )
    if p.returncode not in (0, 1):
        sys.exit(f"bench-report exited {p.returncode}: {p.stderr}")
    with open(os.path.join(cwd, "build/bench/gups.json")) as f:
        doc = json.load(f)
    with open(os.path.join(cwd, "build/bench/gups.md")) as f:
        md = f.read()
    return p.returncode, doc, md


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True, help="scripts/bench-report")
    args = ap.parse_args()
    failures = []

    def expect(what, ok):
        print(("ok - " if ok else "FAIL - ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run1")
        os.makedirs(run_dir)
        arm(run_dir, "ideal", [1000] * 60, first_line=3)
        arm(run_dir, "tierd", [500] * 10 + [950] * 50)
        # tierd's share series: the samples of the last 30 s (36, 48, 60) average 70%
        write(os.path.join(run_dir, "share-tierd.tsv"), "12 10.0\n24 20.0\n36 50.0\n48 70.0\n60 90.0\n")
        write(os.path.join(run_dir, "checks"), f"ok - [ideal] the table is intact\nFAIL - {FAILED}\n")
        rc, doc, md = report(args.script, tmp, run_dir)
        arms = {a["name"]: a for a in doc["arms"]}
        expect(f"case 1 exits 0 (got {rc})", rc == 0)
        expect(f"failed_checks {doc.get('failed_checks')}", doc.get("failed_checks") == [FAILED])
        expect("the arms in order ideal, tierd", [a["name"] for a in doc["arms"]] == ["ideal", "tierd"])
        expect(f"ideal's series after first_line: {len(arms['ideal']['series'])} values",
               arms["ideal"]["series"] == [1000] * 60)
        expect(f"tierd's steady throughput {arms['tierd']['steady_throughput']}",
               arms["tierd"]["steady_throughput"] == 950)
        expect(f"tierd x ideal {arms['tierd']['normalized_to_ideal']}",
               arms["tierd"]["normalized_to_ideal"] == 0.95)
        expect(f"tierd at 90% of ideal from second {arms['tierd']['time_to_90pct_s']}",
               arms["tierd"]["time_to_90pct_s"] == 9)
        expect(f"tierd's share from its series {arms['tierd']['fast_access_share']},"
               f" last 5 s {arms['tierd']['fast_access_share_last_5s']}",
               arms["tierd"]["fast_access_share"] == 0.7
               and arms["tierd"]["fast_access_share_last_5s"] == 0.897)
        expect(f"ideal's share without a series: last 5 s {arms['ideal']['fast_access_share']}",
               arms["ideal"]["fast_access_share"] == 0.897)
        expect("the table lists the failed check",
               "1 of the rig's checks failed in this boot" in md and FAILED in md)
        expect("the table's tierd row", "| tierd | 950 | - | 0.95 | 9 | - | 70.0% | 1 | 1.50 | 0.50 | 0.10 | ok |" in md)

        run_dir = os.path.join(tmp, "run2")
        os.makedirs(run_dir)
        arm(run_dir, "ideal", [1000] * 40)
        arm(run_dir, "none", [400] * 40, data_ok=False)
        write(os.path.join(run_dir, "checks"), "ok - [ideal] the table is intact\n")
        rc, doc, md = report(args.script, tmp, run_dir)
        expect(f"case 2 exits 1 (got {rc}): an arm's data not intact", rc == 1)
        expect(f"case 2 failed_checks {doc.get('failed_checks')}", doc.get("failed_checks") == [])
        expect("case 2's table: none's data BAD, no failed-check line",
               "| none | 400 |" in md and md.rstrip().endswith("| BAD |") and "checks failed" not in md)

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
