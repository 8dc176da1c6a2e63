#!/usr/bin/env python3
"""Evaluates the PromQL of the shipped Grafana dashboards on a running Prometheus server.

Shared by the host test (tests/integration/dashboards_prometheus_test.py: Prometheus scraping
tierd-metrics-demo) and the rig scenario `metrics` (tests/vm/scenarios/metrics: Prometheus in the
guest scraping tierd while it tiers tierd-gups), so both read the dashboards the same way:

- every panel target's `expr` with its panel title (dashboards/*.json, panels nested in rows too);
- Grafana's variables substituted: $__rate_interval -> RATE_INTERVAL, $workload / ${workload} ->
  the workload given (a name from tierd's config);
- each sent to /api/v1/query (instant query, now); it must parse and return >= 1 series;
- each `label_values(METRIC, LABEL)` template variable sent to /api/v1/label/LABEL/values with
  match[]=METRIC; the values must include the workload.

With `require_nonzero` (--require-nonzero) a query must also return at least one series with a
nonzero finite value: a dashboard fed only by counters declared at 0 does not pass. An
expression may be allowed to be all zero only with a reason (`may_be_zero`, like
`may_be_empty`; a reason for empty also allows zero).

An expression may be allowed to be empty only with a reason (`may_be_empty`: a fragment of the
raw expression -> why it can be empty in this run); the reason is printed with it. A fragment
that matches no expression is an error (stale justification).

As a program (busybox-free: only the Python standard library, runs in the rig guest from the
host's /usr): prints one table row per query and exits 0 when every query returned data or is
justified, 1 otherwise, 2 on bad arguments or an unreachable server.
"""
import argparse
import json
import math
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

RATE_INTERVAL = "1m"


def load_dashboards(directory):
    """[(file name, parsed dashboard)] of every *.json in `directory`, sorted by name."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                out.append((name, json.load(f)))
    return out


def panel_queries(dash):
    """[(panel title, raw expr)] of every target of every panel, rows' nested panels included."""
    out = []

    def walk(node, title):
        if isinstance(node, dict):
            title = node.get("title", title) if "targets" in node or "panels" in node else title
            for target in node.get("targets", []) or []:
                if isinstance(target, dict) and isinstance(target.get("expr"), str):
                    out.append((title or "?", target["expr"]))
            for key, value in node.items():
                if key != "targets":
                    walk(value, title)
        elif isinstance(node, list):
            for value in node:
                walk(value, title)

    walk(dash.get("panels", []), None)
    return out


def variable_queries(dash):
    """[(variable name, metric, label)] of the dashboard's label_values(METRIC, LABEL) variables."""
    out = []
    for var in dash.get("templating", {}).get("list", []):
        query = var.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if isinstance(query, str) and query.startswith("label_values(") and query.endswith(")"):
            metric, label = [s.strip() for s in query[len("label_values("):-1].split(",")]
            out.append((var["name"], metric, label))
    return out


def substitute(expr, workload, rate_interval=RATE_INTERVAL):
    """`expr` with Grafana's $__rate_interval, $workload / ${workload} and $instance (All: .*)
    replaced."""
    return (expr.replace("$__rate_interval", rate_interval)
            .replace("${workload}", workload).replace("$workload", workload)
            .replace("$instance", ".*"))


def http_json(url, timeout=10):
    """The JSON body of GET `url`; an HTTP error's JSON body (Prometheus explains bad queries)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read().decode())
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        try:
            return json.loads(body)
        except ValueError:
            return {"status": "error", "error": f"HTTP {e.code}: {body[:200]}"}


def instant_query(base, expr):
    """(number of series or -1 on error, result list, error text) of /api/v1/query?query=expr."""
    body = http_json(f"{base}/api/v1/query?query={urllib.parse.quote(expr)}")
    if body.get("status") != "success":
        return -1, [], body.get("error", "no status")
    result = body.get("data", {}).get("result", [])
    if body.get("data", {}).get("resultType") == "scalar":
        result = [{"metric": {}, "value": result}]
    return len(result), result, ""


def sample(result):
    """A short 'value {labels}' of one series of an instant result, preferring a finite value
    (__name__, instance and job left out: one target)."""
    if not result:
        return "-"
    pick = result[0]
    for s in result:
        try:
            if math.isfinite(float(s["value"][1])):
                pick = s
                break
        except (KeyError, IndexError, ValueError):
            pass
    raw = pick.get("value", [0, "?"])[1]
    try:
        value = f"{float(raw):.4g}"
    except ValueError:
        value = raw
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(pick.get("metric", {}).items())
                      if k not in ("__name__", "instance", "job"))
    return value + (" {" + labels + "}" if labels else "")


def nonzero(result):
    """True when some series of an instant result has a finite value other than 0."""
    for s in result:
        try:
            v = float(s["value"][1])
        except (KeyError, IndexError, ValueError):
            continue
        if math.isfinite(v) and v != 0:
            return True
    return False


def evaluate(base, directory, workload, may_be_empty=None, out=print, rate_interval=RATE_INTERVAL,
             require_nonzero=False, may_be_zero=None):
    """Runs every dashboard query against the Prometheus at `base` (http://host:port) and prints
    one row each: verdict, series count, panel title, a sample value, the expression sent.
    `may_be_empty`: {fragment of a raw expression: reason}. With `require_nonzero`, a query
    whose series are all 0 fails unless `may_be_zero` (or `may_be_empty`) justifies it.
    Returns (queries, failures)."""
    may_be_empty = dict(may_be_empty or {})
    may_be_zero = dict(may_be_zero or {})
    used = set()
    total = failures = 0
    rows = []
    for name, dash in load_dashboards(directory):
        for title, raw in panel_queries(dash):
            total += 1
            expr = substitute(raw, workload, rate_interval)
            n, result, error = instant_query(base, expr)
            reason = next((r for frag, r in may_be_empty.items() if frag in raw), None)
            zero_reason = reason or next((r for frag, r in may_be_zero.items() if frag in raw),
                                         None)
            for frag in list(may_be_empty) + list(may_be_zero):
                if frag in raw:
                    used.add(frag)
            if n >= 1 and require_nonzero and not nonzero(result):
                if zero_reason:
                    verdict = "zero-ok"
                    reason = zero_reason
                else:
                    verdict = "FAIL"
                    error = error or "every series is 0 (no real observation)"
                    failures += 1
            elif n >= 1:
                verdict = "ok"
            elif n == 0 and reason:
                verdict = "empty-ok"
            else:
                verdict = "FAIL"
                failures += 1
            rows.append((verdict, n, f"{name}: {title}", sample(result), expr, error, reason))
        for var, metric, label in variable_queries(dash):
            total += 1
            body = http_json(f"{base}/api/v1/label/{label}/values?match[]="
                             f"{urllib.parse.quote(metric)}")
            values = body.get("data", []) if body.get("status") == "success" else []
            # $workload must offer the configured workload; $instance the scraped exporter.
            ok = workload in values if var == "workload" else bool(values)
            failures += 0 if ok else 1
            rows.append(("ok" if ok else "FAIL", len(values), f"{name}: ${var}", ",".join(values),
                         f"label_values({metric}, {label})", body.get("error", ""), None))
    width = min(60, max((len(r[2]) for r in rows), default=10))
    out(f"{'verdict':<8} {'series':>6}  {'panel':<{width}}  {'sample value':<40}  expression")
    for verdict, n, title, value, expr, error, reason in rows:
        out(f"{verdict:<8} {n:>6}  {title[:width]:<{width}}  {value[:40]:<40}  {expr}")
        if error:
            out(f"{'':<8} error: {error}")
        if verdict == "empty-ok":
            out(f"{'':<8} may be empty in this run: {reason}")
        if verdict == "zero-ok":
            out(f"{'':<8} may be 0 in this run: {reason}")
    for frag in sorted((set(may_be_empty) | set(may_be_zero)) - used):
        failures += 1
        out(f"FAIL     justification for '{frag}' matches no dashboard expression (stale)")
    if total == 0:
        out("FAIL     no dashboard expressions found")
        failures += 1
    out(f"{total - failures}/{total} dashboard queries returned data"
        f"{' (nonzero)' if require_nonzero else ''} or are justified")
    return total, failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prometheus", required=True, help="base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--dashboards", required=True, help="the dashboards/ directory")
    ap.add_argument("--workload", required=True, help="value of $workload (a configured name)")
    ap.add_argument("--rate-interval", default=RATE_INTERVAL, help="value of $__rate_interval")
    ap.add_argument("--may-be-empty", nargs=2, action="append", default=[],
                    metavar=("FRAGMENT", "REASON"),
                    help="expressions containing FRAGMENT may return no series, because REASON")
    ap.add_argument("--require-nonzero", action="store_true",
                    help="every query must return a series with a nonzero value")
    ap.add_argument("--may-be-zero", nargs=2, action="append", default=[],
                    metavar=("FRAGMENT", "REASON"),
                    help="with --require-nonzero: expressions containing FRAGMENT may be all 0")
    ap.add_argument("--key", nargs=2, action="append", default=[], metavar=("WHAT", "EXPR"),
                    help="after the table, print every series of EXPR under the heading WHAT")
    args = ap.parse_args(argv)
    try:
        _, failures = evaluate(args.prometheus, args.dashboards, args.workload,
                               dict(args.may_be_empty), rate_interval=args.rate_interval,
                               require_nonzero=args.require_nonzero,
                               may_be_zero=dict(args.may_be_zero))
        for what, expr in args.key:
            n, result, error = instant_query(args.prometheus, expr)
            print(f"{what}: {expr}" + (f"  error: {error}" if error else ""))
            for s in result:
                print(f"    {sample([s])}")
            if n == 0:
                print("    (no series)")
    except OSError as e:
        print(f"FAIL     cannot query {args.prometheus}: {e}")
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
