#!/usr/bin/env python3
"""The target graph of docs/architecture.md holds in the code (ctest `architecture`).

Reads the table between the architecture-table markers of docs/architecture.md (target, folder,
may depend on) and fails, naming file and line, when
  - the table has a cycle or names an unknown target,
  - a C++ file under a listed folder includes a header of a folder its target may not depend on
    (directly or through the targets it names),
  - a folder's CMakeLists.txt links a tierd_* target its target may not depend on,
  - a folder holding C++ sources under tierd/, telemetry/ or policy/ is missing from the table.
Usage: architecture_test.py SOURCE_DIR
"""
import os
import re
import sys

ROW = re.compile(r"^\|\s*`(\w+)`\s*\|\s*`([\w/]+)`\s*\|(.*)\|\s*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LINK = re.compile(r"target_link_libraries\(\s*(\S+)(.*?)\)", re.S)


def read_table(doc):
    rows, inside = {}, False
    with open(doc) as f:
        for n, line in enumerate(f, 1):
            if "architecture-table" in line:
                inside = True
                continue
            if "end architecture-table" in line:
                break
            m = ROW.match(line) if inside else None
            if m:
                rows[m.group(1)] = (m.group(2), re.findall(r"`(\w+)`", m.group(3)), n)
    return rows


def closure(rows, target, errors, path=()):
    if target in path:
        errors.append("docs/architecture.md: cycle " + " -> ".join(path + (target,)))
        return set()
    out = set()
    for dep in rows[target][1]:
        if dep not in rows:
            errors.append("docs/architecture.md:%d: %s depends on unknown target %s"
                          % (rows[target][2], target, dep))
            continue
        out |= {dep} | closure(rows, dep, errors, path + (target,))
    return out


def main(src):
    errors = []
    rows = read_table(os.path.join(src, "docs", "architecture.md"))
    if not rows:
        print("docs/architecture.md: no architecture table found")
        return 1
    allowed = {t: closure(rows, t, errors) for t in rows}
    folders = {folder: t for t, (folder, _, _) in rows.items()}

    def owner(path):
        best = None
        for folder in folders:
            if (path == folder or path.startswith(folder + "/")) and (
                    best is None or len(folder) > len(best)):
                best = folder
        return folders.get(best)

    for top in ("tierd", "telemetry", "policy"):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            rel_dir = os.path.relpath(dirpath, src)
            sources = [f for f in files if f.endswith((".cpp", ".h"))]
            target = owner(rel_dir)
            if sources and target is None:
                errors.append("%s: C++ sources in a folder that docs/architecture.md does not "
                              "list" % rel_dir)
                continue
            for name in sources:
                rel = os.path.join(rel_dir, name)
                with open(os.path.join(src, rel)) as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dep = owner(os.path.dirname(m.group(1)))
                        if dep and dep != target and dep not in allowed[target]:
                            errors.append("%s:%d: %s (%s) includes %s of %s, which it may not "
                                          "depend on" % (rel, n, rel_dir, target, m.group(1), dep))
            if "CMakeLists.txt" in files:
                with open(os.path.join(dirpath, "CMakeLists.txt")) as f:
                    text = f.read()
                for m in LINK.finditer(text):
                    if m.group(1) not in rows:
                        continue  # an executable: it may link what it needs
                    for dep in re.findall(r"\btierd_\w+", m.group(2)):
                        if dep != "tierd_options" and dep not in allowed[m.group(1)]:
                            errors.append("%s/CMakeLists.txt: %s links %s, which it may not "
                                          "depend on" % (rel_dir, m.group(1), dep))
    for e in errors:
        print(e)
    print("architecture: %d targets, %s" % (len(rows), "%d violations" % len(errors)
                                             if errors else "every include and link allowed"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
