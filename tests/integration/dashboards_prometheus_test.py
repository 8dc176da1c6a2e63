#!/usr/bin/env python3
"""Evaluates every PromQL expression of the Grafana dashboards on a real Prometheus server.

Starts tierd-model-exporter (tierd's tick engine moving memory on the model kernel, with the
daemon's own metrics code on the production exporter; tests/integration/ModelExporter.cpp) on a
free loopback port, starts the Debian `prometheus` server on another free loopback port with a
temporary storage dir scraping it every second, waits (bounded poll, no fixed sleep) until several
scrapes succeeded, then evaluates the dashboards with tests/lib/dashboard_queries.py (shared with
the rig scenario `metrics`): each expression -- with Grafana's $__rate_interval and $workload
substituted -- goes to /api/v1/query and must parse and return at least one series with a
nonzero value (a counter declared at 0 is no observation); the expressions that may be 0 in this
run are listed in MAY_BE_ZERO, each with its reason. The $workload variable's label_values()
query must list the workload. Both processes are stopped at the end, whatever happens.
Exit 0 = pass, 1 = fail, 77 = skipped (no prometheus).
"""
import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import dashboard_queries  # noqa: E402  (tests/lib: shared with the rig scenario `metrics`)

WORKLOAD = "gups"
# Dashboard expressions (fragments) that may return no series in the model run, and why.
MAY_BE_EMPTY = {
    "tierd_kernel_vmstat_events_total":
        "the model's topology fixture has no /proc/vmstat (the kernel's counters are not modelled)",
    "tierd_kernel_migrate_offload_events_total":
        "the model's kernel has no kernel-patches/ patch 3 (no /sys/kernel/mm/migrate_offload)",
}
# Dashboard expressions (fragments) that may be 0 after ticks that moved memory, and why.
MAY_BE_ZERO = {
    'tierd_migrate_pages_total{instance=~"$instance",result!="moved"}':
        "no page is busy, gone or refused in the model run",
    "tierd_daemon_errors_total": "a clean run: nothing failed",
    "tierd_sampler_lost_samples_total": "the scripted source loses no sample (perf LOST only)",
    "tierd_sampler_throttle_events_total": "no PERF_RECORD_THROTTLE from a scripted source",
    "tierd_sampler_period_events": "0 for sources that are not perf sources",
    "tierd_sampler_interval_seconds": "only DAMON reports a sampling interval",
    "tierd_config_reloads_total": "no SIGHUP in this run",
    "tierd_placement_settled": "1 only 10 ticks after the last moves: 0 while the model run moves",
    "tierd_metrics_rejected_updates_total": "must be 0: no update is dropped",
    "tierd_daemon_last_tick_timestamp_seconds":
        "time since the last tick: the exporter stamps whole seconds, so it can read 0",
    'tierd_hotness_hot_bytes{instance=~"$instance",workload="$workload",tier="slow"}':
        "hot bytes left on the slow tier: 0 once the hot set is promoted",
    'tierd_hotness_cold_bytes{instance=~"$instance",workload="$workload",tier="fast"}':
        "cold bytes on the fast tier: 0 once cooled regions are demoted",
}
DEADLINE_S = 90  # upper bound for the whole run; the poll usually ends after ~5 scrapes


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exporter", required=True, help="path of tierd-model-exporter")
    ap.add_argument("--fixtures", required=True, help="tests/fixtures (the model's topology)")
    ap.add_argument("--dashboards", required=True, help="dashboards/ directory")
    ap.add_argument("--prometheus", default=shutil.which("prometheus"))
    args = ap.parse_args()
    if not args.prometheus:
        print("SKIP: the prometheus server is not installed (scripts/install-deps installs it)")
        return 77

    start = time.monotonic()

    def left():
        return DEADLINE_S - (time.monotonic() - start)

    tmp = tempfile.mkdtemp(prefix="tierd-prom-")
    demo = prom = None
    try:
        demo = subprocess.Popen([args.exporter, "--fixtures", args.fixtures, "--listen",
                                 "127.0.0.1:0", "--max-seconds", str(DEADLINE_S + 30)],
                                stdout=subprocess.PIPE, text=True)
        ready, _, _ = select.select([demo.stdout], [], [], 30)
        line = demo.stdout.readline() if ready else ""
        if not line.startswith("listening on port "):
            print(f"FAIL: tierd-model-exporter did not start (got {line!r})")
            return 1
        demo_port = int(line.split()[-1])

        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: tierd\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{demo_port}']\n")
        base = None
        for attempt in range(3):  # a free port can be taken between probe and bind: retry
            port = free_port()
            prom = subprocess.Popen(
                [args.prometheus, f"--config.file={config}",
                 f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "prom.log"), "w"))
            base = f"http://127.0.0.1:{port}"
            while left() > 0 and prom.poll() is None:
                try:
                    with urllib.request.urlopen(base + "/-/ready", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                time.sleep(0.2)
            if prom.poll() is None:
                break
            print(f"note: prometheus exited on port {port} (attempt {attempt + 1}), retrying")
        if prom.poll() is not None or left() <= 0:
            print("FAIL: prometheus did not become ready:\n" + open(os.path.join(tmp, "prom.log")).read())
            return 1

        # Bounded poll: wait for at least 5 successful scrapes, so every rate() over 1m has data.
        scrapes = 0
        while left() > 0:
            try:
                q = urllib.parse.quote('sum_over_time(up{job="tierd"}[5m])')
                res = http_json(f"{base}/api/v1/query?query={q}")["data"]["result"]
                scrapes = int(float(res[0]["value"][1])) if res else 0
            except (OSError, KeyError, IndexError, ValueError):
                scrapes = 0
            if scrapes >= 5:
                break
            time.sleep(0.25)
        if scrapes < 5:
            print(f"FAIL: only {scrapes} successful scrapes of the exporter before the deadline")
            return 1
        print(f"prometheus {base} scraped tierd-model-exporter :{demo_port} {scrapes} times")

        _, failures = dashboard_queries.evaluate(base, args.dashboards, WORKLOAD, MAY_BE_EMPTY,
                                                 require_nonzero=True, may_be_zero=MAY_BE_ZERO)
        return 1 if failures else 0
    finally:
        stop(prom)
        stop(demo)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
