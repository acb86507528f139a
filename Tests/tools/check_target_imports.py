#!/usr/bin/env python3
"""Package.swift lists exactly what each target imports (docs/ARCHITECTURE.md: "Package.swift is the authority").

Reads `swift package dump-package` on stdin and the targets' sources; fails, naming the target and the modules,
when a target imports a module it does not declare (it compiles only because another dependency brings it in)
or declares one it never imports. Platform and toolchain modules are not declared and not checked.

With `--graph DOC`, also checks that DOC's module graph (the mermaid block between `<!-- module-graph -->` and
`<!-- /module-graph -->`) is the one Package.swift declares, and prints the right one when it is not; with
`--write-graph DOC` it writes it there."""
import glob
import json
import re
import sys

TOOLCHAIN = {"Foundation", "FoundationEssentials", "Glibc", "Musl", "Darwin", "Dispatch", "Testing", "XCTest",
             "Synchronization", "_Concurrency", "os"}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+|(?:public|package|internal)\s+)?import\s+"
                    r"(?:(?:struct|class|enum|protocol|func|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)")

package = json.load(sys.stdin)
problems = []
for target in package["targets"]:
    if target["type"] == "system":
        continue
    declared = set()
    for dependency in target.get("dependencies", []):
        for value in dependency.values():
            declared.add(value[0] if isinstance(value, list) else value)
    root = target.get("path") or ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
    imported = set()
    for path in glob.glob(root + "/**/*.swift", recursive=True):
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = IMPORT.match(line)
                if m:
                    imported.add(m.group(1))
    imported -= TOOLCHAIN
    if imported - declared:
        problems.append(f"{target['name']} imports {sorted(imported - declared)} without declaring them")
    if declared - imported:
        problems.append(f"{target['name']} declares {sorted(declared - imported)} and never imports them")


def graph(package):
    """The shipped modules and what each declares, as a mermaid flowchart (tests, the test kit and the benchmarks
    left out)."""
    lines = ["```mermaid", "flowchart BT"]
    for target in package["targets"]:
        if target["type"] == "test" or target["name"] in ("BLETestSupport", "blegateway-bench"):
            continue
        for dependency in target.get("dependencies", []):
            for kind, value in dependency.items():
                if kind == "product":
                    continue  # third-party packages are listed in the text, not drawn
                name = value[0] if isinstance(value, list) else value
                if name == "BLETestSupport":
                    continue
                lines.append(f"    {target['name']} --> {name}")
    lines.append("```")
    return "\n".join(lines)


START, END = "<!-- module-graph -->", "<!-- /module-graph -->"
for flag in ("--graph", "--write-graph"):
    if flag in sys.argv:
        doc = sys.argv[sys.argv.index(flag) + 1]
        text = open(doc, encoding="utf-8").read()
        if START not in text or END not in text:
            problems.append(f"{doc} has no {START} … {END} block")
            continue
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        wanted = graph(package)
        if flag == "--write-graph":
            open(doc, "w", encoding="utf-8").write(f"{head}{START}\n{wanted}\n{END}{tail}")
        elif rest.split(END, 1)[0].strip() != wanted:
            problems.append(f"{doc}'s module graph is not the one Package.swift declares; it is:\n{wanted}")

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
